// --dry-run drives the agent's own path (streams, change tracker, config,
// renderer, reconciler, flowtable device derivation) against the fake kernel:
// what it prints is what the agent commits. Checked against the real kernel:
// the agent programs a namespace, the kernel's table is read back, and it
// equals what the dry run's fake kernel holds.

import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DryRunError, dryRun, renderKernelText } from '../../src/agent/dry-run.ts';
import { parseCommandLine } from '../../src/cli/flags.ts';
import { toLinkInfo, type LinkMap } from '../../src/links/link-state.ts';
import { readSysfsLinks, staticLinkSource } from '../../src/links/sysfs-links.ts';
import type { TableListing } from '../../src/nft/dataplane.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import { NetlinkDataplane } from '../../src/nft/netlink/netlink-dataplane.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { packageRoot } from '../../src/package-root.ts';
import { eventually } from '../e2e/agent-process.ts';
import { createNetns, type NetNs } from '../helpers/netns.ts';

const examples = join(packageRoot, 'examples');
const silent = createLogger('silent');
const base = ['--manifests', examples, '--hostname-override', 'node-a', '--cluster-cidr', '10.244.0.0/16', '--min-sync-period', '0'];
function optionsFor(extra: string[]) {
  const command = parseCommandLine([...base, ...extra]);
  if (command.command !== 'run') throw new Error(`not a run: ${command.command}`);
  return command.options;
}

function links(...names: string[]): LinkMap {
  const lo = toLinkInfo({ index: 1, name: 'lo', flags: 0x49, kind: '', mtu: 65536, operState: 0, master: 0 });
  return new Map([
    [1, lo],
    ...names.map(
      (name, i) => [i + 2, toLinkInfo({ index: i + 2, name, flags: 0x1043, kind: 'veth', mtu: 1500, operState: 6, master: 0 })] as const,
    ),
  ]);
}

/** A listing with the kernel's free choices taken out: element order, set flag order, rule handles. */
function normalised(l: TableListing | undefined): unknown {
  if (!l) return undefined;
  const key = (x: unknown) => JSON.stringify(x);
  return {
    ...l,
    rules: l.rules.map(({ handle: _handle, ...r }) => r),
    sets: l.sets.map((s) => ({ ...s, ...(s.flags ? { flags: [...s.flags].sort() } : {}) })),
    elements: [...l.elements].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)),
  };
}

describe('--dry-run', () => {
  const namespaces: NetNs[] = [];
  afterAll(() => {
    for (const n of namespaces) n.destroy();
  });

  it('prints exactly what the agent commits to the kernel', async () => {
    const ns = createNetns('knp-dry');
    namespaces.push(ns);
    // The agent itself, programming the namespace (this kernel has no flowtables: offload off on both sides).
    const agent = spawn(
      process.execPath,
      [
        join(packageRoot, 'src/cli.ts'),
        ...base,
        `--netns=${ns.name}`,
        '--offload-packet-threshold=0',
        '--metrics-bind-address=127.0.0.1:0',
        '--healthz-bind-address=127.0.0.1:0',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    agent.stdout.on('data', (d) => (out += d));
    try {
      await eventually(
        async () => out,
        (o) => o.includes('synced nftables rules'),
        20_000,
        "the agent's first sync",
      );
    } finally {
      agent.kill('SIGTERM');
      await once(agent, 'exit');
    }
    const kernel = new FakeKernel();
    const text = await dryRun(optionsFor([`--netns=${ns.name}`, '--offload-packet-threshold=0']), silent, {
      kernel,
      links: () => staticLinkSource(links('eth0')),
    });
    const real = new NetlinkDataplane({ netns: ns.path });
    for (const family of ['ip', 'ip6'] as const) {
      const committed = kernel.listSync(family, 'kube-nft-proxy');
      expect(committed?.rules.length, family).toBeGreaterThan(10);
      expect(normalised(await real.list(family, 'kube-nft-proxy')), family).toEqual(normalised(committed));
    }
    expect(text).toBe(`# kube-nft-proxy --dry-run for node node-a: 8 service ports\n# flowtable offload off\n${renderKernelText(kernel)}`);
  });

  it('derives the flowtable devices from the node links as the agent does (loopback never, the filter flags applied)', async () => {
    const gate = '--feature-gates=KubeProxyAcceleration=true';
    const all = await dryRun(optionsFor([gate]), silent, { links: () => staticLinkSource(links('eth0', 'veth-a')) });
    expect(all).toContain('# flowtable support assumed, not probed');
    expect(all).toMatch(/devices = \{ "eth0", "veth-a" \}/);
    expect(all).toMatch(/flow add @service-flowtable/);
    const narrowed = await dryRun(optionsFor([gate, '--offload-exclude-interfaces=veth-a']), silent, {
      links: () => staticLinkSource(links('eth0', 'veth-a')),
    });
    expect(narrowed).toMatch(/devices = \{ "eth0" \}/);
  });

  it('fails with DryRunError when the first sync fails', async () => {
    const kernel = new FakeKernel({ flowtables: true });
    // The capability probe takes the first, the first sync the second.
    kernel.faults.push({ code: 'EINVAL' }, { code: 'EINVAL' }, { code: 'EINVAL' });
    await expect(dryRun(optionsFor([]), silent, { kernel, links: () => staticLinkSource(links()) })).rejects.toBeInstanceOf(DryRunError);
  });

  it('reads the links of the namespace it runs in from /sys (the default link source)', () => {
    const ns = createNetns('knp-sysfs');
    namespaces.push(ns);
    ns.exec('ip', ['link', 'add', 'knp-v0', 'type', 'veth', 'peer', 'name', 'knp-v1']);
    ns.exec('ip', ['link', 'set', 'knp-v0', 'up']);
    const script = `import { readSysfsLinks } from ${JSON.stringify(join(packageRoot, 'src/links/sysfs-links.ts'))};
      console.log(JSON.stringify([...readSysfsLinks().values()].map((l) => [l.name, l.loopback, l.up])));`;
    const seen = JSON.parse(
      execFileSync('ip', ['netns', 'exec', ns.name, process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8' }),
    );
    expect(seen.sort()).toEqual([
      ['knp-v0', false, true],
      ['knp-v1', false, false],
      ['lo', true, true],
    ]);
    // This process's own namespace is read the same way.
    expect([...readSysfsLinks().values()].some((l) => l.loopback)).toBe(true);
  });
});
