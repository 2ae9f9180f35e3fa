// The manifests source never loses a change: the real agent on a manifests
// directory, a new version of a file atomically renamed in at random moments
// right after its first read (when the sync machinery is still starting), and
// the change must be programmed within the debounce, not at the 10 s poll.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNetns, type NetNs } from '../helpers/netns.ts';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

const node = `apiVersion: v1
kind: Node
metadata: {name: node-a}
status: {addresses: [{type: InternalIP, address: 192.0.2.10}]}
`;
const service = (ip: string) => `apiVersion: v1
kind: Service
metadata: {name: web, namespace: demo}
spec: {type: ClusterIP, clusterIP: ${ip}, clusterIPs: [${ip}], ports: [{name: http, port: 80, protocol: TCP, targetPort: 8080}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: demo, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints: [{addresses: [10.244.0.11], conditions: {ready: true}}]
`;

// Seeded, so that a failure replays: moments (ms after the first read) spread
// over the first sync and what follows it.
function moments(n: number, seed: number): number[] {
  let s = seed;
  const next = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
  return Array.from({ length: n }, () => Math.round(next() * 500));
}

describe('a manifests change right after start', { timeout: 120_000 }, () => {
  let ns: NetNs;
  beforeAll(() => {
    ns = createNetns('knp-mf');
  });
  afterAll(() => ns?.destroy());

  it.each(moments(Number(process.env.N ?? 10), 20261125))(
    'is programmed promptly when renamed in %i ms after the first read',
    async (at) => {
      const dir = mkdtempSync(join(tmpdir(), 'knp-manifests-'));
      writeFileSync(join(dir, 'node.yaml'), node);
      writeFileSync(join(dir, 'web.yaml'), service('10.96.0.10'));
      const child = spawn(
        process.execPath,
        [
          CLI,
          `--manifests=${dir}`,
          '--hostname-override=node-a',
          `--netns=${ns.name}`,
          '--healthz-bind-address=',
          '--metrics-bind-address=',
          '--offload-packet-threshold=0',
          '--log-level=debug',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let logs = '';
      child.stdout!.on('data', (d) => (logs += d));
      child.stderr!.on('data', (d) => (logs += d));
      try {
        const deadline = performance.now() + 20_000;
        while (!logs.includes('"manifests loaded"') && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
        await new Promise((r) => setTimeout(r, at));
        writeFileSync(join(dir, '.web.yaml.tmp'), service('10.96.0.20'));
        renameSync(join(dir, '.web.yaml.tmp'), join(dir, 'web.yaml'));
        const renamedAt = performance.now();
        // The debounce is 100 ms and syncs are immediate (min-sync-period 0):
        // 4 s leaves room for a slow start, far below the 10 s poll.
        let table = '';
        while (performance.now() - renamedAt < 4000) {
          const r = ns.tryExec('nft', ['list', 'table', 'ip', 'kube-nft-proxy']);
          table = r.stdout;
          if (table.includes('10.96.0.20 . tcp . 80')) break;
          await new Promise((r) => setTimeout(r, 50));
        }
        expect(table, logs).toContain('10.96.0.20 . tcp . 80');
        expect(table).not.toContain('10.96.0.10 . tcp . 80');
      } finally {
        child.kill('SIGTERM');
        if (child.exitCode === null) await once(child, 'exit');
        ns.tryExec('nft', ['delete', 'table', 'ip', 'kube-nft-proxy']);
        ns.tryExec('nft', ['delete', 'table', 'ip6', 'kube-nft-proxy']);
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
