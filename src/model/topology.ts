// Topology: which of a service's endpoints this node prefers, in two stages.
//
// Stage 1, KEP-2030 slice subsetting (gate TopologyAwareProxying). A slice
// labelled for-zone=Z is delivered to nodes in zone Z, for-region=R to nodes in
// region R, an unlabelled slice to every node. Per service port and family:
//   1. some slice for our zone has a ready endpoint  -> only the for-zone=<our zone> slices;
//   2. else some slice for our region (and no zone)  -> only the for-region=<our region> slices;
//   3. else                                          -> every slice (the pre-KEP behaviour,
//                                                       including other zones' slices and
//                                                       the unlabelled ones).
// So unlabelled slices are "for everyone" in the sense that they are never
// filtered by topology; they are not mixed into a zone's or region's subset,
// because the KEP says a node with slices for its zone uses "only those
// endpoints". A slice carrying both labels counts as a zone slice (zones are
// subsets of regions and zone names are unique). A tier counts only when it has
// a ready endpoint: a zone whose slices hold nothing ready falls back rather
// than black-holing traffic. A node without a zone label skips tier 1, without
// a region label tier 2. The subset is everything the node uses: cluster, Local
// and hint selection all work within it, as if the node had only received
// those slices (what the KEP's label-selector design would deliver).
//
// Stage 2, topology hints (always on, as in kube-proxy), within the subset and
// for Cluster policies only. Hints are written by the EndpointSlice controller
// from spec.trafficDistribution (PreferClose / PreferSameZone -> forZones;
// PreferSameNode -> forNodes and forZones) or the topology-mode annotation, so
// the proxy trusts the hints, not the spec field:
//   - every ready endpoint has node hints and one names this node -> those endpoints;
//   - else every ready endpoint has zone hints and one names our zone -> those;
//   - else no hint filtering. A node without a zone label gets no zone filtering.

import type { Candidate } from './endpoint-candidates.ts';
import { assertNever } from '../assert-never.ts';

export interface NodeTopology {
  nodeName: string;
  zone?: string;
  region?: string;
}

export type SubsetTier = 'zone' | 'region' | 'all';

export interface Subset {
  tier: SubsetTier;
  candidates: Candidate[];
}

/** KEP-2030 stage; `enabled` is the TopologyAwareProxying gate. */
export function subsetForNode(candidates: Candidate[], node: NodeTopology, enabled: boolean): Subset {
  if (!enabled) return { tier: 'all', candidates };
  const { zone, region } = node;
  if (zone !== undefined && zone !== '') {
    if (candidates.some((c) => c.ready && c.slice.forZone === zone)) {
      return { tier: 'zone', candidates: candidates.filter((c) => c.slice.forZone === zone) };
    }
  }
  if (region !== undefined && region !== '') {
    const forRegion = (c: Candidate): boolean => c.slice.forZone === undefined && c.slice.forRegion === region;
    if (candidates.some((c) => c.ready && forRegion(c))) {
      return { tier: 'region', candidates: candidates.filter(forRegion) };
    }
  }
  return { tier: 'all', candidates };
}

export type HintMode = 'none' | 'node' | 'zone';

/** Stage 2: which hints apply, judged over the ready endpoints. */
export function hintMode(candidates: readonly Candidate[], node: NodeTopology): HintMode {
  let anyReady = false;
  let allNodeHinted = true;
  let nodeMatch = false;
  let allZoneHinted = true;
  let zoneMatch = false;
  const zone = node.zone !== undefined && node.zone !== '' ? node.zone : undefined;
  for (const c of candidates) {
    if (!c.ready) continue;
    anyReady = true;
    if (c.nodeHints === undefined) allNodeHinted = false;
    else if (c.nodeHints.includes(node.nodeName)) nodeMatch = true;
    if (c.zoneHints === undefined) allZoneHinted = false;
    else if (zone !== undefined && c.zoneHints.includes(zone)) zoneMatch = true;
  }
  if (!anyReady) return 'none';
  if (allNodeHinted && nodeMatch) return 'node';
  if (allZoneHinted && zoneMatch) return 'zone';
  return 'none';
}

export function allowedByHints(c: Candidate, mode: HintMode, node: NodeTopology): boolean {
  switch (mode) {
    case 'none':
      return true;
    case 'node':
      return c.nodeHints?.includes(node.nodeName) ?? false;
    case 'zone':
      return c.zoneHints !== undefined && node.zone !== undefined && c.zoneHints.includes(node.zone);
    default:
      assertNever(mode);
  }
}
