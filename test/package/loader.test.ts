// The addon loader (src/native/addon.ts) as it runs in an installed package:
// the override, then the platform package, then a local build; a failure
// lists each place tried and why. Run on a copy of the compiled loader in a
// scratch package root, so that what is installed there is exactly what the
// test put there.

import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.ts';
import { ADDON_EXPORTS, ensureRelease, releaseDir } from './release-tarballs.ts';

const PLATFORM = '@kube-nft-proxy/linux-x64-gnu';

interface Outcome {
  loaded?: string[];
  code?: string;
  attempts?: Array<{ source: string; reason: string }>;
  message?: string;
}

describe('the addon loader in an installed package', () => {
  let root: string;
  beforeAll(async () => {
    // dist/ too: release:pack's prepack compiles it, once per run and under its lock.
    await ensureRelease();
    root = mkdtempSync(join(tmpdir(), 'knp-loader-'));
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'kube-nft-proxy', type: 'module' }));
    cpSync(join(packageRoot, 'dist/src'), join(root, 'dist/src'), { recursive: true });
  }, 900_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  function load(env: NodeJS.ProcessEnv = {}): Outcome {
    const script = `
      const { loadAddon } = await import(${JSON.stringify(join(root, 'dist/src/native/addon.js'))});
      try { console.log(JSON.stringify({ loaded: Object.keys(loadAddon()).sort() })); }
      catch (e) { console.log(JSON.stringify({ code: e.code, attempts: e.attempts, message: e.message })); }`;
    const env2: NodeJS.ProcessEnv = { ...process.env, ...env };
    if (!('KUBE_NFT_PROXY_ADDON' in env)) delete env2.KUBE_NFT_PROXY_ADDON;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: root,
      encoding: 'utf8',
      env: env2,
      timeout: 30_000,
    });
    expect(r.stderr).toBe('');
    return JSON.parse(r.stdout) as Outcome;
  }
  const installPlatform = (node: (dir: string) => void) => {
    const dir = join(root, 'node_modules', PLATFORM);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: PLATFORM, version: '0.0.0' }));
    node(dir);
  };

  it('with nothing installed, lists the platform package and both local builds, each with its reason, and says what to do', () => {
    const out = load();
    expect(out.code).toBe('ERR_NATIVE_LOAD');
    expect(out.attempts).toEqual([
      { source: PLATFORM, reason: 'not installed' },
      { source: join(root, 'build/Release/kube_nft_proxy.node'), reason: 'no such file' },
      { source: join(root, 'build/Debug/kube_nft_proxy.node'), reason: 'no such file' },
    ]);
    expect(out.message).toMatch(/npm run build:native/);
  });

  it('takes the platform package when it is installed', () => {
    installPlatform((dir) => cpSync(join(releaseDir, 'platform/linux-x64-gnu'), dir, { recursive: true }));
    expect(load().loaded).toEqual(ADDON_EXPORTS);
  });

  it('falls back to a local build when the platform package is broken, and says why it skipped it', () => {
    installPlatform((dir) => writeFileSync(join(dir, 'kube_nft_proxy.node'), 'not an ELF file'));
    const out = load();
    expect(out.attempts?.[0]?.source).toBe(PLATFORM);
    expect(out.attempts?.[0]?.reason).toMatch(/invalid ELF header|file too short/);
    mkdirSync(join(root, 'build/Release'), { recursive: true });
    cpSync(join(releaseDir, 'platform/linux-x64-gnu'), join(root, 'build/Release'), { recursive: true });
    expect(load().loaded).toContain('commit');
    rmSync(join(root, 'build'), { recursive: true });
  });

  it('uses the override alone when it is set, even with a working platform package', () => {
    installPlatform((dir) => cpSync(join(releaseDir, 'platform/linux-x64-gnu'), dir, { recursive: true }));
    const out = load({ KUBE_NFT_PROXY_ADDON: join(root, 'missing.node') });
    expect(out.attempts).toEqual([{ source: `KUBE_NFT_PROXY_ADDON=${join(root, 'missing.node')}`, reason: 'no such file' }]);
  });
});
