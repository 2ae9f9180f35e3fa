// The manifest source with real files: load, rename-replace, ConfigMap-style
// symlink swap, a bad document, local selectors.

import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServiceInfo, StoreEvent } from '../../src/k8s/types.ts';
import { createClusterStreams, type ClusterStreams } from '../../src/streams/cluster-streams.ts';
import { parseManifestText } from '../../src/streams/manifest-files.ts';
import { ManifestSourceError } from '../../src/streams/manifest-source.ts';
import { recordingLogger, waitFor } from './helpers.ts';

const examples = join(import.meta.dirname, '../../examples');

let dir = '';
let opened: ClusterStreams[] = [];
afterEach(async () => {
  for (const s of opened) await s.stop();
  opened = [];
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = '';
});

function svcYaml(name: string, port = 80, labels = '{}'): string {
  return (
    `apiVersion: v1\nkind: Service\nmetadata: { namespace: demo, name: ${name}, labels: ${labels} }\nspec: { ` +
    `clusterIP: 10.96.9.${port % 250}, ports: [{ name: p, port: ${port} }] }\n`
  );
}

async function open(path: string, extra: { serviceProxyName?: string; nodeName?: string } = {}) {
  const log = recordingLogger();
  const s = await createClusterStreams({ source: 'manifests', path, logger: log.logger, debounceMs: 20, ...extra });
  opened.push(s);
  const events: StoreEvent<ServiceInfo>[] = [];
  s.services$.subscribe((e) => events.push(e));
  await s.whenSynced();
  return { s, log, events, svcLog: () => events.map((e) => `${e.type} ${e.key}`) };
}

describe('manifest source', () => {
  it('loads the bundled examples with KEP-31 and headless filtered locally', async () => {
    const { s } = await open(examples, { nodeName: 'node-a' });
    expect([...s.services.entries()].map(([k]) => k).sort()).toEqual(['demo/api', 'demo/dns', 'demo/shop', 'demo/signalling', 'demo/web']);
    expect([...s.endpointSlices.entries()].map(([k]) => k).sort()).toEqual([
      'demo/api-1',
      'demo/dns-1',
      'demo/shop-1',
      'demo/signalling-1',
      'demo/web-v4',
      'demo/web-v6',
    ]);
    expect(s.node()).toMatchObject({ name: 'node-a', zone: 'zone-a', region: 'region-1' });
    expect(s.services.get('demo/shop')!.loadBalancerIngress).toEqual([
      { ip: '198.51.100.10', ipMode: 'VIP' },
      { ip: '198.51.100.11', ipMode: 'Proxy' },
    ]);
    const webSlices = [...s.endpointSlices.values()].filter((x) => x.serviceName === 'web');
    expect(webSlices.flatMap((x) => x.ports.map((p) => `${x.addressType}/${p.name}/${x.endpoints.length}`)).sort()).toEqual([
      'IPv4/http/3',
      'IPv4/https/3',
      'IPv6/http/2',
      'IPv6/https/2',
    ]);
  });

  it('leaves out a Service whose port name is not a DNS label, alone: logged with the reason and counted', async () => {
    dir = mkdtempSync(join(tmpdir(), 'knp-manifests-'));
    const bad = svcYaml('bad', 81).replace('name: p,', 'name: "Ünïcode-Port",');
    writeFileSync(join(dir, 'services.yaml'), [svcYaml('good', 80), bad, svcYaml('also-good', 82)].join('---\n'));
    const { s, log } = await open(dir);
    expect([...s.services.entries()].map(([k]) => k).sort()).toEqual(['demo/also-good', 'demo/good']);
    expect(s.invalidObjects()).toEqual({ services: 1, endpointSlices: 0, nodes: 0 });
    expect(log.lines.some((l) => l.key === 'demo/bad' && String(l.reason).includes('spec.ports[0].name is not a DNS label'))).toBe(true);
  });

  it('with a service-proxy-name serves only what is labelled for it', async () => {
    const { s } = await open(examples, { serviceProxyName: 'other-proxy', nodeName: 'node-a' });
    expect([...s.services.entries()].map(([k]) => k)).toEqual(['demo/legacy']);
    expect([...s.endpointSlices.entries()].map(([k]) => k)).toEqual(['demo/legacy-1']);
  });

  it('sees a file replaced atomically by rename, emitting only the differences', async () => {
    dir = mkdtempSync(join(tmpdir(), 'manifests-'));
    writeFileSync(join(dir, 'svc.yaml'), [svcYaml('a'), svcYaml('b'), svcYaml('c')].join('---\n'));
    const m = await open(dir);
    expect(m.svcLog().sort()).toEqual(['upsert demo/a', 'upsert demo/b', 'upsert demo/c']);
    m.events.length = 0;
    writeFileSync(join(dir, '.svc.yaml.tmp'), [svcYaml('a'), svcYaml('b', 81), svcYaml('d')].join('---\n'));
    renameSync(join(dir, '.svc.yaml.tmp'), join(dir, 'svc.yaml'));
    await waitFor(() => m.s.services.has('demo/d'), 3000, 'rename to be seen');
    await waitFor(() => m.events.length >= 3);
    expect(m.svcLog().sort()).toEqual(['delete demo/c', 'upsert demo/b', 'upsert demo/d']);
    expect(m.s.services.get('demo/b')!.ports[0]!.port).toBe(81);
  });

  it('follows a ConfigMap-style ..data symlink swap, and a single file path inside it', async () => {
    dir = mkdtempSync(join(tmpdir(), 'configmap-'));
    const gen = (n: number, content: string) => {
      const d = join(dir, `..2025_01_01_00_00_0${n}`);
      mkdirSync(d);
      writeFileSync(join(d, 'services.yaml'), content);
      return `..2025_01_01_00_00_0${n}`;
    };
    symlinkSync(gen(1, svcYaml('one')), join(dir, '..data'));
    symlinkSync('..data/services.yaml', join(dir, 'services.yaml'));
    const whole = await open(dir);
    expect(whole.svcLog()).toEqual(['upsert demo/one']);
    const single = await open(join(dir, 'services.yaml'));
    // Swap as the kubelet does: new dir, new symlink, rename over ..data.
    symlinkSync(gen(2, svcYaml('two')), join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    await waitFor(() => whole.s.services.has('demo/two') && single.s.services.has('demo/two'), 3000, 'swap to be seen');
    await waitFor(() => whole.events.length >= 3 && single.events.length >= 3);
    expect(whole.svcLog()).toEqual(['upsert demo/one', 'delete demo/one', 'upsert demo/two']);
    expect(single.svcLog()).toEqual(['upsert demo/one', 'delete demo/one', 'upsert demo/two']);
  });

  it('follows a --manifests path that is a symlink to a directory swapped as a whole', async () => {
    dir = mkdtempSync(join(tmpdir(), 'swapped-dir-'));
    const version = (n: number, content: string) => {
      mkdirSync(join(dir, `v${n}`));
      writeFileSync(join(dir, `v${n}`, 'services.yaml'), content);
    };
    version(1, svcYaml('one'));
    symlinkSync('v1', join(dir, 'current'));
    const m = await open(join(dir, 'current'));
    expect(m.svcLog()).toEqual(['upsert demo/one']);
    // The old directory stays as it is: nothing inside it changes, only the link.
    version(2, svcYaml('two'));
    symlinkSync('v2', join(dir, 'current.tmp'));
    renameSync(join(dir, 'current.tmp'), join(dir, 'current'));
    await waitFor(() => m.s.services.has('demo/two'), 3000, 'the swapped directory to be read');
    expect(m.svcLog()).toEqual(['upsert demo/one', 'delete demo/one', 'upsert demo/two']);
  });

  it('reports a document that fails to parse and loads the others', async () => {
    dir = mkdtempSync(join(tmpdir(), 'manifests-'));
    writeFileSync(join(dir, 'a.yaml'), [svcYaml('good1'), 'metadata: { name: [unclosed\n', svcYaml('good2')].join('---\n'));
    writeFileSync(join(dir, 'b.yaml'), svcYaml('bad-port', 99999));
    const m = await open(dir);
    expect([...m.s.services.entries()].map(([k]) => k).sort()).toEqual(['demo/good1', 'demo/good2']);
    const skipped = m.log.find('manifest document skipped');
    expect(skipped).toHaveLength(1);
    expect(skipped[0]).toMatchObject({ file: join(dir, 'a.yaml'), document: 1 });
    expect(m.log.find('invalid object left out')[0]).toMatchObject({
      key: 'demo/bad-port',
      reason: 'spec.ports[0].port out of range: 99999',
    });
    // Fixing the file brings the document in; the report is not repeated meanwhile.
    writeFileSync(join(dir, 'a.yaml'), [svcYaml('good1'), svcYaml('good3'), svcYaml('good2')].join('---\n'));
    await waitFor(() => m.s.services.has('demo/good3'), 3000);
    expect(m.log.find('manifest document skipped')).toHaveLength(1);
  });

  it('refuses a path that does not exist', async () => {
    await expect(
      createClusterStreams({ source: 'manifests', path: '/nonexistent/manifests', logger: recordingLogger().logger }),
    ).rejects.toBeInstanceOf(ManifestSourceError);
  });

  it('parses JSON and kind: List', () => {
    const text = readFileSync(join(examples, 'node.yaml'), 'utf8');
    expect(parseManifestText('n.yaml', text).objects).toHaveLength(1);
    const list = JSON.stringify({ kind: 'List', items: [{ kind: 'Service' }, { kind: 'Node' }] });
    expect(parseManifestText('l.json', list).objects.map((o) => o.kind)).toEqual(['Service', 'Node']);
  });
});
