// The real agent as a child process (node src/cli.ts), pointed at the fake API
// server and programming a node namespace; and the API objects the e2e tests
// create, written out in full so each test shows what the cluster holds.

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FakeApiServer, K8sObject } from '../fake-apiserver/index.ts';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

export interface AgentProcess {
  child: ChildProcess;
  /** Everything the agent logged so far (pino JSON lines). */
  logs(): string;
  /** The same lines, parsed. */
  entries(): Array<Record<string, unknown>>;
  stop(): Promise<number | null>;
}

export interface AgentProcessOptions {
  /** Run the agent inside the namespace, as a hostNetwork pod runs on its node, instead of programming it from outside. */
  inside?: boolean;
  /** The API server's URL as the agent reaches it (default: the fake server's own). */
  server?: string;
  /** The node executable and the script it runs (default: this Node, src/cli.ts). */
  command?: [node: string, script: string];
}

export async function startAgentProcess(
  api: FakeApiServer,
  netns: string,
  extraArgs: string[] = [],
  o: AgentProcessOptions = {},
): Promise<AgentProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'knp-agent-'));
  const kubeconfig = join(dir, 'kubeconfig');
  const config = api.kubeconfig() as { clusters: Array<{ cluster: { server: string } }> };
  if (o.server) config.clusters[0]!.cluster.server = o.server;
  writeFileSync(kubeconfig, JSON.stringify(config));
  const [nodeBinary, script] = o.command ?? [process.execPath, CLI];
  const child = spawn(
    o.inside ? 'ip' : nodeBinary,
    [
      ...(o.inside ? ['netns', 'exec', netns, nodeBinary, script] : [script]),
      `--kubeconfig=${kubeconfig}`,
      '--hostname-override=node-a',
      ...(o.inside ? [] : [`--netns=${netns}`]),
      '--min-sync-period=0',
      '--cluster-cidr=10.244.0.0/16,fd00:10:244::/64',
      '--service-cluster-ip-range=10.96.0.0/16,fd00:10:96::/112',
      '--metrics-bind-address=127.0.0.1:0',
      '--healthz-bind-address=127.0.0.1:0',
      '--log-level=debug',
      ...extraArgs,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return {
    child,
    logs: () => out,
    entries: () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await once(child, 'exit');
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
      return child.exitCode;
    },
  };
}

/** Polls fn until it returns true, or throws with the last value after timeoutMs. */
export async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await fn();
    if (ok(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// --- API objects ----------------------------------------------------------------

export function nodeObject(name: string, zone: string, region: string, internalIP: string): K8sObject {
  return {
    metadata: {
      name,
      labels: { 'kubernetes.io/hostname': name, 'topology.kubernetes.io/zone': zone, 'topology.kubernetes.io/region': region },
    },
    spec: { podCIDRs: ['10.244.0.0/24'] },
    status: { addresses: [{ type: 'InternalIP', address: internalIP }] },
  };
}

export interface SvcSpec {
  name: string;
  clusterIP: string;
  port?: number;
  protocol?: 'TCP' | 'UDP';
  type?: 'ClusterIP' | 'NodePort' | 'LoadBalancer';
  nodePort?: number;
  externalIPs?: string[];
  ingress?: Array<{ ip: string; ipMode?: 'VIP' | 'Proxy' }>;
  externalTrafficPolicy?: 'Cluster' | 'Local';
  internalTrafficPolicy?: 'Cluster' | 'Local';
  healthCheckNodePort?: number;
  sessionAffinity?: boolean;
  labels?: Record<string, string>;
}

export function serviceObject(s: SvcSpec): K8sObject {
  const port = s.port ?? 80;
  return {
    metadata: { namespace: 'e2e', name: s.name, labels: s.labels ?? {} },
    spec: {
      type: s.type ?? 'ClusterIP',
      clusterIP: s.clusterIP,
      clusterIPs: [s.clusterIP],
      ipFamilies: [s.clusterIP.includes(':') ? 'IPv6' : 'IPv4'],
      ports: [{ name: 'p', protocol: s.protocol ?? 'TCP', port, targetPort: 8080, ...(s.nodePort ? { nodePort: s.nodePort } : {}) }],
      ...(s.externalIPs ? { externalIPs: s.externalIPs } : {}),
      ...(s.externalTrafficPolicy ? { externalTrafficPolicy: s.externalTrafficPolicy } : {}),
      ...(s.healthCheckNodePort ? { healthCheckNodePort: s.healthCheckNodePort } : {}),
      internalTrafficPolicy: s.internalTrafficPolicy ?? 'Cluster',
      sessionAffinity: s.sessionAffinity ? 'ClientIP' : 'None',
      ...(s.sessionAffinity ? { sessionAffinityConfig: { clientIP: { timeoutSeconds: 300 } } } : {}),
    },
    status: { loadBalancer: s.ingress ? { ingress: s.ingress } : {} },
  };
}

export interface EpSpec {
  ip: string;
  node?: string;
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
}

export function sliceObject(
  service: string,
  name: string,
  endpoints: EpSpec[],
  opts: { labels?: Record<string, string>; protocol?: 'TCP' | 'UDP'; family?: 'IPv4' | 'IPv6' } = {},
): K8sObject {
  return {
    metadata: { namespace: 'e2e', name, labels: { 'kubernetes.io/service-name': service, ...(opts.labels ?? {}) } },
    addressType: opts.family ?? 'IPv4',
    ports: [{ name: 'p', protocol: opts.protocol ?? 'TCP', port: 8080 }],
    endpoints: endpoints.map((e) => ({
      addresses: [e.ip],
      conditions: { ready: e.ready ?? true, serving: e.serving ?? e.ready ?? true, terminating: e.terminating ?? false },
      nodeName: e.node ?? 'node-a',
    })),
  };
}
