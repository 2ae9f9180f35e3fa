// The real agent (node src/cli.ts) as a child process inside the flowtable VM,
// reading its cluster state from a directory of YAML and programming the
// router namespace; its pino log lines parsed, for scenarios that watch what it
// does and judge what it says.

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../../src/cli.ts', import.meta.url));

export interface LogEntry {
  level: number;
  msg: string;
  /** Milliseconds on the agent's clock (same machine: comparable with Date.now()). */
  time: number;
  [field: string]: unknown;
}

export interface AgentChild {
  child: ChildProcess;
  /** Every complete log line so far, parsed; lines that are not JSON come back as level 0 with the text in msg. */
  entries(): LogEntry[];
  /** Waits for the first entry from index `from` on that satisfies pred. */
  waitFor(pred: (e: LogEntry) => boolean, timeoutMs: number, from?: number): Promise<LogEntry>;
  /** GET /metrics from the address the agent logged. */
  metrics(): Promise<string>;
  /** SIGTERM, then waits for the exit; returns the exit code. */
  stop(): Promise<number | null>;
}

export const SYNCED = 'synced nftables rules';
export const SYNC_FAILED = 'nftables sync failed; will retry';

export interface ClusterIpService {
  name: string;
  clusterIP: string;
  ports: number[];
  endpointIP: string;
}

/** A Node and ClusterIP Services with their EndpointSlices, as YAML files in a new directory. */
export function writeManifests(nodeName: string, nodeIP: string, services: ClusterIpService[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'knp-manifests-'));
  writeFileSync(
    join(dir, 'node.yaml'),
    `apiVersion: v1
kind: Node
metadata: { name: ${nodeName}, labels: { kubernetes.io/hostname: ${nodeName} } }
status:
  addresses:
    - { type: InternalIP, address: ${nodeIP} }
`,
  );
  for (const s of services) {
    const ports = s.ports.map((p) => `    - { name: p${p}, protocol: TCP, port: ${p}, targetPort: ${p} }`).join('\n');
    const slicePorts = s.ports.map((p) => `  - { name: p${p}, protocol: TCP, port: ${p} }`).join('\n');
    writeFileSync(
      join(dir, `${s.name}.yaml`),
      `apiVersion: v1
kind: Service
metadata: { namespace: vm, name: ${s.name} }
spec:
  type: ClusterIP
  clusterIP: ${s.clusterIP}
  clusterIPs: [${s.clusterIP}]
  ipFamilies: [IPv4]
  ports:
${ports}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  namespace: vm
  name: ${s.name}-1
  labels: { kubernetes.io/service-name: ${s.name} }
addressType: IPv4
ports:
${slicePorts}
endpoints:
  - { addresses: [${s.endpointIP}], conditions: { ready: true, serving: true, terminating: false }, nodeName: ${nodeName} }
`,
    );
  }
  return dir;
}

export function startAgentChild(args: string[]): AgentChild {
  const child = spawn(
    process.execPath,
    [
      // The scenario's own node flags (the guest's --no-wasm-tier-up, stage2.sh).
      ...process.execArgv,
      CLI,
      '--feature-gates=KubeProxyAcceleration=true',
      '--metrics-bind-address=127.0.0.1:0',
      '--healthz-bind-address=127.0.0.1:0',
      '--min-sync-period=0',
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const parsed: LogEntry[] = [];
  let partial = '';
  const waiters = new Set<() => void>();
  const onText = (d: Buffer) => {
    partial += d.toString();
    const lines = partial.split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      if (line.trim() === '') continue;
      try {
        parsed.push(JSON.parse(line) as LogEntry);
      } catch {
        parsed.push({ level: 0, msg: line, time: Date.now() });
      }
    }
    for (const w of waiters) w();
  };
  child.stdout!.on('data', onText);
  child.stderr!.on('data', onText);

  const waitFor = (pred: (e: LogEntry) => boolean, timeoutMs: number, from = 0): Promise<LogEntry> =>
    new Promise((resolve, reject) => {
      const check = () => {
        const hit = parsed.slice(from).find(pred);
        if (hit) {
          done();
          resolve(hit);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          done();
          reject(new Error(`the agent exited (${child.exitCode ?? child.signalCode}) before the awaited log line; last lines:\n${tail()}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no awaited agent log line within ${timeoutMs} ms; last lines:\n${tail()}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(check);
        child.off('exit', check);
      };
      waiters.add(check);
      child.on('exit', check);
      check();
    });
  const tail = () =>
    parsed
      .slice(-15)
      .map((e) => JSON.stringify(e))
      .join('\n');

  return {
    child,
    entries: () => parsed,
    waitFor,
    async metrics() {
      const served = await waitFor((e) => e.msg === 'serving /healthz and /metrics', 30_000);
      const res = await fetch(`http://${String(served.metrics)}/metrics`);
      return res.text();
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        // Under TCG emulation on a loaded 2-core host the agent's orderly stop
        // (link monitor thread join, servers, watchers) has taken over 10 s.
        const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
        await exited;
        clearTimeout(timer);
      }
      return child.exitCode;
    },
  };
}

/** The value of one unlabelled sample in Prometheus text, or undefined. */
export function metricValue(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}
