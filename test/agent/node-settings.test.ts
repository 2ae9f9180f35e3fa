// kube-proxy's conntrack sysctls and oom_score_adj, planned as kube-proxy 1.32
// does and written to a /proc/sys-shaped directory.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyOomScoreAdj, applySysctls, conntrackSysctls, growConntrackHashsize } from '../../src/agent/node-settings.ts';

const DEFAULTS = {
  maxPerCore: 32768,
  min: 131072,
  tcpEstablishedTimeout: 86_400_000,
  tcpCloseWaitTimeout: 3_600_000,
  tcpBeLiberal: false,
  udpTimeout: 0,
  udpStreamTimeout: 0,
};

describe('conntrackSysctls', () => {
  it("plans kube-proxy's defaults: max = max(perCore x CPUs, min), the TCP timeouts in seconds", () => {
    expect(conntrackSysctls(DEFAULTS, 2)).toEqual([
      { path: 'net/netfilter/nf_conntrack_max', value: 131072 },
      { path: 'net/netfilter/nf_conntrack_tcp_timeout_established', value: 86400 },
      { path: 'net/netfilter/nf_conntrack_tcp_timeout_close_wait', value: 3600 },
    ]);
    expect(conntrackSysctls(DEFAULTS, 8)[0]!.value).toBe(262144);
  });

  it('leaves what is 0 alone and sets be_liberal and the UDP timeouts only when asked', () => {
    const plan = conntrackSysctls(
      { ...DEFAULTS, maxPerCore: 0, tcpEstablishedTimeout: 0, tcpBeLiberal: true, udpTimeout: 30_000, udpStreamTimeout: 300_000 },
      4,
    );
    expect(plan.map((s) => `${s.path}=${s.value}`)).toEqual([
      'net/netfilter/nf_conntrack_tcp_timeout_close_wait=3600',
      'net/netfilter/nf_conntrack_tcp_be_liberal=1',
      'net/netfilter/nf_conntrack_udp_timeout=30',
      'net/netfilter/nf_conntrack_udp_timeout_stream=300',
    ]);
  });
});

describe('applySysctls', () => {
  it('writes what differs, skips what is already right, and reports what cannot be written', async () => {
    const root = mkdtempSync(join(tmpdir(), 'knp-sysctl-'));
    try {
      mkdirSync(join(root, 'net/netfilter'), { recursive: true });
      writeFileSync(join(root, 'net/netfilter/nf_conntrack_max'), '65536\n');
      writeFileSync(join(root, 'net/netfilter/nf_conntrack_tcp_timeout_established'), '86400\n');
      const r = await applySysctls(conntrackSysctls(DEFAULTS, 2), root);
      expect(r.changed.map((s) => s.path)).toEqual(['net/netfilter/nf_conntrack_max']);
      expect(readFileSync(join(root, 'net/netfilter/nf_conntrack_max'), 'utf8')).toBe('131072\n');
      expect(r.failed).toEqual([{ path: 'net/netfilter/nf_conntrack_tcp_timeout_close_wait', wanted: 3600, reason: 'ENOENT' }]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('grows the conntrack hash table to a quarter of the maximum, never shrinks it', async () => {
    const root = mkdtempSync(join(tmpdir(), 'knp-hash-'));
    try {
      const file = join(root, 'hashsize');
      writeFileSync(file, '16384\n');
      expect((await growConntrackHashsize(131072, file)).changed).toEqual({ path: file, value: 32768 });
      expect(readFileSync(file, 'utf8')).toBe('32768\n');
      expect(await growConntrackHashsize(65536, file)).toEqual({});
      expect((await growConntrackHashsize(131072, join(root, 'none'))).failed?.reason).toBe('ENOENT');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('sets oom_score_adj, and says why it cannot', async () => {
    const root = mkdtempSync(join(tmpdir(), 'knp-oom-'));
    try {
      const file = join(root, 'oom_score_adj');
      writeFileSync(file, '0\n');
      expect(await applyOomScoreAdj(-999, file)).toBeUndefined();
      expect(readFileSync(file, 'utf8')).toBe('-999\n');
      expect(await applyOomScoreAdj(-999, join(root, 'missing', 'oom_score_adj'))).toBe('ENOENT');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
