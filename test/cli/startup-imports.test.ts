// What the agent loads before it can start: the modules of the CLI's static
// import graph. Packages only some runs need (the YAML parser for
// --manifests, @kubernetes/client-node for kubeconfigs our reader hands over)
// must not be in it: each costs start-up time on every node (yaml alone ~70
// modules, ~20 ms of CPU), so they are imported where they are used. So is
// undici, which only a proxy needs (src/streams/api/proxy-client.ts).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The package names of every module loaded by importing `entries` (relative to the repository). */
function packagesLoadedBy(entries: string[]): Set<string> {
  const script = `
    import { registerHooks } from 'node:module';
    const urls = [];
    registerHooks({ load(url, context, next) { urls.push(url); return next(url, context); } });
    for (const e of ${JSON.stringify(entries)}) await import(new URL(e, 'file://${root}/').href);
    process.stdout.write(JSON.stringify(urls));
  `;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 30_000 });
  const packages = new Set<string>();
  for (const url of JSON.parse(out) as string[]) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (m) packages.add(m[1]!);
  }
  return packages;
}

describe("the agent's start-up imports", () => {
  const loaded = packagesLoadedBy([
    'src/agent/agent.ts',
    'src/agent/dry-run.ts',
    'src/nft/netlink/netlink-dataplane.ts',
    'src/cli/flags.ts',
  ]);

  it('include what every run needs', () => {
    for (const p of ['rxjs', 'pino']) expect(loaded).toContain(p);
  });

  it('leave out the YAML parser, client-node and undici until a run asks for them', () => {
    expect(loaded).not.toContain('undici');
    expect(loaded).not.toContain('yaml');
    expect(loaded).not.toContain('@kubernetes/client-node');
  });
});
