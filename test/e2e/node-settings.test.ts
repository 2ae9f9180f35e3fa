// kube-proxy's conntrack section applied by the real agent where the node
// allows it, and one clear warning for the rest. Run inside a network namespace
// (no --netns): there the timeouts are the namespace's own and writable, while
// nf_conntrack_max is read-only, as on a node whose /proc/sys is not ours.
// Nothing is set by a start that fails before it has made its API client, and
// --init-only sets them and exits, failing where one cannot be set.

import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { eventually } from './agent-process.ts';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));

describe('conntrack settings', { timeout: 60_000 }, () => {
  let ns: NetNs;
  const sysctl = (name: string) => Number(ns.exec('sysctl', ['-n', `net.netfilter.${name}`]).trim());
  beforeAll(() => {
    ns = createNetns('knp-ct');
    // A rule with a ct match loads nf_conntrack, and with it these sysctls, where it is not loaded yet.
    ns.exec('nft', ['-f', '-'], {
      input: 'table ip ct-probe {\n chain c {\n  type filter hook output priority 0\n  ct state new accept\n }\n}\n',
    });
    ns.exec('nft', ['delete', 'table', 'ip', 'ct-probe']);
  });
  afterAll(() => ns?.destroy());

  /** The CLI in the namespace with these flags, run to its end: its exit code and all it wrote. */
  async function cliToEnd(args: string[], env?: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
    const child = ns.spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...(env ? { env } : {}) });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    // 'close', not 'exit': its output is read to the end by then.
    const [code] = (await once(child, 'close')) as [number | null];
    return { code, out };
  }

  // kube-proxy sets them only after making its client; with --init-only too.
  it.each([[[]], [['--init-only']]])('changes nothing when its kubeconfig cannot be read (%j)', async (extra: string[]) => {
    const home = mkdtempSync(join(tmpdir(), 'knp-no-kubeconfig-'));
    try {
      const before = sysctl('nf_conntrack_tcp_timeout_established');
      expect(before).not.toBe(10800);
      // No --kubeconfig, no KUBECONFIG, a home without .kube/config: client-node's default chain finds nothing.
      const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
      delete env.KUBECONFIG;
      const { code, out } = await cliToEnd(
        [
          '--hostname-override=node-a',
          '--healthz-bind-address=',
          '--metrics-bind-address=',
          '--conntrack-tcp-timeout-established=3h',
          ...extra,
        ],
        env,
      );
      expect(out).toContain('ERR_KUBECONFIG');
      expect(code).not.toBe(0);
      expect(sysctl('nf_conntrack_tcp_timeout_established')).toBe(before);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('with --init-only, sets them and exits, programming nothing', async () => {
    expect(sysctl('nf_conntrack_tcp_timeout_established')).not.toBe(14400);
    // nf_conntrack_max left alone: outside the host's namespace it is read-only, which would fail --init-only (next test).
    const { code, out } = await cliToEnd([
      `--manifests=${EXAMPLES}`,
      '--hostname-override=node-a',
      '--init-only',
      '--conntrack-tcp-timeout-established=4h',
      '--conntrack-max-per-core=0',
    ]);
    expect(code, out).toBe(0);
    expect(out).toContain('--init-only');
    expect(sysctl('nf_conntrack_tcp_timeout_established')).toBe(14400);
    expect(ns.exec('nft', ['list', 'tables']).trim()).toBe('');
  });

  it('with --init-only, fails when a sysctl cannot be set', async () => {
    const { code, out } = await cliToEnd([
      `--manifests=${EXAMPLES}`,
      '--init-only',
      '--conntrack-max-per-core=1',
      `--conntrack-min=${sysctl('nf_conntrack_max') + 1024}`,
    ]);
    expect(code, out).toBe(1);
    expect(out).toContain('nf_conntrack_max');
  });

  it('sets the timeouts it may set and warns once about nf_conntrack_max', async () => {
    expect(sysctl('nf_conntrack_tcp_timeout_established')).not.toBe(7200);
    // A maximum unlike the node's, so that the agent must try to write it (it leaves an equal value alone).
    const conntrackMin = sysctl('nf_conntrack_max') + 1024;
    const child = ns.spawn(
      process.execPath,
      [
        CLI,
        `--manifests=${EXAMPLES}`,
        '--hostname-override=node-a',
        '--healthz-bind-address=',
        '--metrics-bind-address=',
        '--offload-packet-threshold=0',
        '--conntrack-tcp-timeout-established=2h',
        '--conntrack-udp-timeout=45s',
        '--conntrack-tcp-be-liberal',
        '--conntrack-max-per-core=1',
        `--conntrack-min=${conntrackMin}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    try {
      await eventually(
        async () => out,
        (o) => o.includes('synced nftables rules'),
        20_000,
        'a first sync',
      );
      const lines = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, any>);
      expect(sysctl('nf_conntrack_tcp_timeout_established')).toBe(7200);
      expect(sysctl('nf_conntrack_udp_timeout')).toBe(45);
      expect(sysctl('nf_conntrack_tcp_be_liberal')).toBe(1);
      const warnings = lines.filter((l) => l.level === 40 && String(l.msg).includes('conntrack sysctls'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.failed.map((f: { path: string }) => f.path)).toEqual(['net/netfilter/nf_conntrack_max']);
    } finally {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    }
  });
});
