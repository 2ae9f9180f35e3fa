// Endpoint categorisation with kube-proxy's meaning, for one service port and
// family, over the candidates this node may use (after KEP-2030 subsetting and
// duplicate merging):
//
//   usable            = ready endpoints; when none is ready anywhere, the serving
//                       and terminating ones (graceful termination, KEP-1669).
//   Cluster policy    = usable endpoints, narrowed by topology hints when those
//                       apply (hints are judged over ready endpoints only; the
//                       terminating fallback is never hint-filtered because it is
//                       only reached when nothing is ready anywhere).
//   Local policy      = this node's ready endpoints; when none, this node's
//                       serving-terminating ones (even if others are ready elsewhere,
//                       so draining a node keeps its local traffic flowing).
//   reject            = nothing usable anywhere: tell the client at once.
//   drop              = a Local policy, nothing usable here, but something elsewhere:
//                       the node must not answer (the LB's health check moves traffic).
//
// internalTrafficPolicy governs traffic to the ClusterIP; externalTrafficPolicy
// governs NodePorts, externalIPs and LB IPs, and only for an externally
// accessible service (kube-proxy's ExternalPolicyLocal). For a service nothing
// external reaches, `external` mirrors `cluster` so the lists stay consistent.

import type { Endpoint, EndpointSelection } from './service-port.ts';
import type { Candidate } from './endpoint-candidates.ts';
import { allowedByHints, hintMode, type HintMode, type NodeTopology } from './topology.ts';

export interface PolicyFlags {
  externallyAccessible: boolean;
  externalPolicyLocal: boolean;
  internalPolicyLocal: boolean;
}

export interface Selection {
  cluster: EndpointSelection;
  external: EndpointSelection;
  /** Every endpoint either selection uses (kube-proxy's allReachableEndpoints). */
  allEndpoints: Endpoint[];
  hintMode: HintMode;
}

const REJECT: EndpointSelection = Object.freeze({ kind: 'reject' });
const DROP: EndpointSelection = Object.freeze({ kind: 'drop' });

function isServingTerminating(c: Candidate): boolean {
  return !c.ready && c.serving && c.terminating;
}

// Two literals rather than adding `zone` afterwards: a property added to an
// object after its literal goes to an out-of-object property array (40 more
// bytes per endpoint, 4 MiB at 100k endpoints). `zone` stays absent when unset.
function toEndpoint(c: Candidate): Endpoint {
  if (c.zone !== undefined) {
    return { ip: c.ip, port: c.port, isLocal: c.isLocal, ready: c.ready, serving: c.serving, terminating: c.terminating, zone: c.zone };
  }
  return { ip: c.ip, port: c.port, isLocal: c.isLocal, ready: c.ready, serving: c.serving, terminating: c.terminating };
}

function sameEndpoints(a: readonly Endpoint[], b: readonly Endpoint[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** `sorted`: by address then port, free of duplicates (as mergeDuplicates gives them). */
export function selectEndpoints(sorted: readonly Candidate[], policy: PolicyFlags, node: NodeTopology): Selection {
  const mode = hintMode(sorted, node);

  let clusterSet = sorted.filter((c) => c.ready && allowedByHints(c, mode, node));
  if (clusterSet.length === 0) clusterSet = sorted.filter(isServingTerminating);

  let localSet = sorted.filter((c) => c.isLocal && c.ready);
  if (localSet.length === 0) localSet = sorted.filter((c) => c.isLocal && isServingTerminating(c));

  const hasAny = sorted.some((c) => c.ready || isServingTerminating(c));

  // One Endpoint object per candidate, shared by every list that names it. The
  // first list converts its candidates directly; candidate → Endpoint is
  // looked up only for a second list (policies that differ), and its Map is
  // built then: most ports have one list, and a Map for each took ~50 ms of
  // the model's ~650 at 100k Services × 10 endpoints.
  let first: { candidates: readonly Candidate[]; endpoints: Endpoint[] } | undefined;
  let converted: Map<Candidate, Endpoint> | undefined;
  const endpointsOf = (candidates: readonly Candidate[]): Endpoint[] => {
    if (first === undefined) {
      first = { candidates, endpoints: candidates.map(toEndpoint) };
      return first.endpoints;
    }
    const { candidates: firstCandidates, endpoints: firstEndpoints } = first;
    converted ??= new Map(firstCandidates.map((c, i) => [c, firstEndpoints[i]!]));
    const seen = converted;
    return candidates.map((c) => {
      let ep = seen.get(c);
      if (ep === undefined) {
        ep = toEndpoint(c);
        seen.set(c, ep);
      }
      return ep;
    });
  };

  // Each selection is built once and shared when both traffic kinds use it.
  let clusterSelection: EndpointSelection | undefined;
  let localSelection: EndpointSelection | undefined;
  const clusterBased = (): EndpointSelection =>
    (clusterSelection ??= clusterSet.length > 0 ? { kind: 'endpoints', endpoints: endpointsOf(clusterSet) } : REJECT);
  const localBased = (): EndpointSelection => {
    if (localSelection === undefined) {
      if (localSet.length > 0) localSelection = { kind: 'endpoints', endpoints: endpointsOf(localSet) };
      else localSelection = hasAny ? DROP : REJECT;
    }
    return localSelection;
  };

  const cluster = policy.internalPolicyLocal ? localBased() : clusterBased();
  let external: EndpointSelection;
  if (!policy.externallyAccessible) external = cluster;
  else external = policy.externalPolicyLocal ? localBased() : clusterBased();

  // Only the cluster selection's endpoints are used (nothing external reaches
  // the service, as for most, or both policies alike, or external has none):
  // its list is allEndpoints, without a pass over every candidate.
  if (external === cluster || external.kind !== 'endpoints') {
    return { cluster, external, allEndpoints: cluster.kind === 'endpoints' ? cluster.endpoints : [], hintMode: mode };
  }

  const used = new Set<Candidate>();
  if (cluster.kind === 'endpoints') for (const c of policy.internalPolicyLocal ? localSet : clusterSet) used.add(c);
  for (const c of policy.externalPolicyLocal ? localSet : clusterSet) used.add(c);
  let allEndpoints = endpointsOf(sorted.filter((c) => used.has(c)));
  // Usually every endpoint is used by the cluster selection, in the same
  // (sorted) order: one list then serves both, as it would in kube-proxy.
  if (cluster.kind === 'endpoints' && sameEndpoints(allEndpoints, cluster.endpoints)) allEndpoints = cluster.endpoints;

  return { cluster, external, allEndpoints, hintMode: mode };
}
