// The library as an embedder uses it: the programs in examples/library/ run
// against the compiled package (they import 'kube-nft-proxy' by name), README's
// "Library API" names every export, and neither importing the package nor a
// dry run / pure render loads the native addon, whatever the flags.

import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot as root } from '../../src/package-root.ts';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { ensureRelease } from './release-tarballs.ts';

const MISSING_ADDON = '/nonexistent/kube_nft_proxy.node';

function example(name: string, args: string[], opts: { env?: NodeJS.ProcessEnv; noCapabilities?: boolean } = {}) {
  // Without any capability (no CAP_NET_ADMIN, no CAP_DAC_OVERRIDE): the uid
  // stays so that the checkout stays readable wherever it lives.
  const cmd = opts.noCapabilities ? 'setpriv' : process.execPath;
  const pre = opts.noCapabilities ? ['--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', process.execPath] : [];
  return spawnSync(cmd, [...pre, join(root, 'examples/library', name), ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, ...opts.env },
  });
}

describe('examples/library', () => {
  let ns: NetNs | undefined;
  // dist/ as release:pack's prepack compiles it, once per run and under its lock:
  // the package tests run in parallel and must not rewrite dist/ under each other.
  beforeAll(() => ensureRelease(), 900_000);
  afterAll(() => ns?.destroy());

  it('render-text.mjs prints the ruleset from the example manifests with no capabilities and no addon to load', () => {
    const r = example('render-text.mjs', [join(root, 'examples'), 'node-a'], {
      noCapabilities: true,
      env: { KUBE_NFT_PROXY_ADDON: MISSING_ADDON },
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^# kube-nft-proxy --dry-run for node node-a: 8 service ports$/m);
    expect(r.stdout).toMatch(/^table ip kube-nft-proxy \{/m);
    expect(r.stdout).toContain('10.96.0.10 . tcp . 80 : goto service-');
  });

  it('transaction.mjs programs its own table in a namespace', () => {
    ns = createNetns('knp-lib');
    const r = example('transaction.mjs', [ns.name]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(`committed 6 operations in ${ns.name}`);
    const table = ns.exec('nft', ['list', 'table', 'inet', 'example']);
    expect(table).toMatch(/elements = \{ 192\.0\.2\.1, 198\.51\.100\.7 \}/);
    expect(table).toMatch(/ip saddr @blocked counter packets \d+ bytes \d+ drop/);
  });

  it('run-agent.mjs runs the agent in a namespace until its first sync', () => {
    ns ??= createNetns('knp-lib');
    const r = example('run-agent.mjs', [ns.name, join(root, 'examples')]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^programmed 8 service ports with \\d+ operations in ${ns.name}$`, 'm'));
    expect(ns.exec('nft', ['list', 'table', 'ip', 'kube-nft-proxy'])).toContain('10.96.0.10 . tcp . 80');
  });
});

describe('the package without its addon', () => {
  // dist/ as release:pack's prepack compiles it, once per run and under its lock:
  // the package tests run in parallel and must not rewrite dist/ under each other.
  beforeAll(() => ensureRelease(), 900_000);

  it('imports, dry-runs with offload on and renders purely without loading any .node; loadAddon then names the override it tried', () => {
    const script = `
      import { readFileSync } from 'node:fs';
      import * as lib from 'kube-nft-proxy';
      const { options } = lib.parseCommandLine(['--manifests', process.argv[1], '--hostname-override', 'node-a',
        '--offload-packet-threshold', '5', '--feature-gates', 'KubeProxyAcceleration=true', '--netns', 'nowhere']);
      const text = await lib.dryRun(options, lib.createLogger('silent', process.stderr));
      const config = lib.defaultRulesetConfig({ tableName: 'pure', offloadPacketThreshold: 5, flowtableSupported: true,
        flowtableDevices: ['eth0'],
        families: { IPv4: { nodePortAddresses: [], nodeIPs: [], clusterCIDRs: ['10.244.0.0/16'], serviceCIDRs: [] } } });
      const ruleset = lib.renderRuleset([], config);
      const pure = lib.rulesetListings(ruleset).map((l) => lib.renderTableText(l)).join('');
      const loaded = readFileSync('/proc/self/maps', 'utf8').split('\\n').filter((l) => l.endsWith('.node'));
      let attempts;
      try { lib.loadAddon(); } catch (e) { attempts = e.attempts; }
      console.log(JSON.stringify({
        dry: text.includes('flow add @service-flowtable'), pure: pure.includes('table ip pure'), loaded, attempts,
      }));
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, join(root, 'examples')], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, KUBE_NFT_PROXY_ADDON: MISSING_ADDON },
    });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({
      dry: true,
      pure: true,
      loaded: [],
      attempts: [{ source: `KUBE_NFT_PROXY_ADDON=${MISSING_ADDON}`, reason: 'no such file' }],
    });
  });
});

describe("README's Library API", () => {
  it('names every export of the package', async () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const section = /^## Library API\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1] ?? '';
    const lib = await import('../../src/index.ts');
    // Named in code, alone or called: `name` or `name(...)`.
    const missing = Object.keys(lib).filter((name) => !new RegExp(`\`${name}[\`(]`).test(section));
    expect(missing).toEqual([]);
  });
});

describe('bin/kube-nft-proxy.js on an older Node', () => {
  it('says which Node it needs before importing anything', () => {
    // Any Node older than 22.19 on this machine (Debian's or NodeSource's) shows it.
    const old = execFileSync(
      'sh',
      [
        '-c',
        'for n in /usr/bin/node /usr/local/bin/node; do [ -x "$n" ] && "$n" -e ' +
          '"process.exit(+process.versions.node.split(\\".\\")[0] < 22 ? 0 : 1)" && echo "$n" && break; done; ' +
          'true',
      ],
      { encoding: 'utf8' },
    ).trim();
    expect(old, 'an older Node at /usr/bin/node (CI installs Debian nodejs)').not.toBe('');
    const r = spawnSync(old, [join(root, 'bin/kube-nft-proxy.js'), '--help'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^kube-nft-proxy: needs Node\.js 22\.19 or newer \(Node 24 LTS recommended\); this is Node \d+\./);
    expect(r.stdout).toBe('');
  });
});
