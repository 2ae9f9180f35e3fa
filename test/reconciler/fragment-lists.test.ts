// A full sync holds every rendering at once: a fragment's lists must take
// the room of their entries, not the spare room a list grown by push keeps.

import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.ts';

interface ListBytes {
  lists: number;
  /** What the lists' element stores take, from a heap snapshot. */
  held: number;
  /** What they would take holding their entries and nothing more. */
  exact: number;
}

/** Renders 2,000 service ports in a child, holds the fragments and weighs their lists' element stores. */
function fragmentListBytes(endpointShape: 'map' | 'chains'): ListBytes {
  const at = (path: string) => JSON.stringify(join(packageRoot, path));
  const script = `
    import { readFileSync, rmSync } from 'node:fs';
    import { join } from 'node:path';
    import { writeHeapSnapshot } from 'node:v8';
    import { renderServicePort } from ${at('src/reconciler/service-rules.ts')};
    import { config, ep, sp, V4 } from ${at('test/reconciler/fixtures.ts')};
    const LISTS = ['chains', 'sets', 'elements', 'claimKeys', 'ownElements', 'hairpin', 'flowtables', 'regions'];
    const c = config({ endpointShape: ${JSON.stringify(endpointShape)} });
    globalThis.fragments = Array.from({ length: 2000 }, (_, i) => {
      const endpoints = Array.from({ length: 3 }, (_, k) => ep('10.244.' + (i >> 6) + '.' + ((i & 63) * 3 + k)));
      const port = sp({ serviceName: 'svc-' + i, clusterIP: '10.96.' + (i >> 8) + '.' + (i & 255), nodePort: 30000 + i, endpoints });
      return renderServicePort(port, V4, c);
    });
    // Stores of known length tell the snapshot's header and slot sizes.
    globalThis.probes = [Array.from({ length: 3 }, String).slice(), Array.from({ length: 7 }, String).slice()];
    const file = writeHeapSnapshot(join(${JSON.stringify(tmpdir())}, 'fragment-lists-' + process.pid + '.heapsnapshot'));
    const s = JSON.parse(readFileSync(file, 'utf8'));
    rmSync(file);
    const { node_fields: nf, node_types: [nt], edge_fields: ef, edge_types: [et] } = s.snapshot.meta;
    const [N, E] = [nf.length, ef.length];
    const [tIdx, sizeIdx, countIdx] = ['type', 'self_size', 'edge_count'].map((f) => nf.indexOf(f));
    const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => ef.indexOf(f));
    const firstEdge = new Map();
    for (let i = 0, e = 0; i < s.nodes.length; i += N) { firstEdge.set(i, e); e += s.nodes[i + countIdx] * E; }
    const edgesOf = (i, type) => {
      const out = [];
      const from = firstEdge.get(i);
      for (let e = from; e < from + s.nodes[i + countIdx] * E; e += E) if (et[s.edges[e + eType]] === type) out.push(e);
      return out;
    };
    const named = (e) => s.strings[s.edges[e + eName]];
    const to = (e) => s.edges[e + eTo];
    const properties = (i) => new Map(edgesOf(i, 'property').map((e) => [named(e), to(e)]));
    /** The size of the element store of the array at node i; none for an empty one (V8's shared empty store is not in the snapshot). */
    const store = (i) => {
      const e = edgesOf(i, 'internal').find((e) => named(e) === 'elements');
      return e === undefined ? 0 : s.nodes[to(e) + sizeIdx];
    };
    let held = 0;
    let probeSizes = [];
    for (let i = 0; i < s.nodes.length; i += N) {
      if (nt[s.nodes[i + tIdx]] !== 'object') continue;
      const props = properties(i);
      if (props.has('probes')) probeSizes = edgesOf(props.get('probes'), 'element').map((e) => store(to(e)));
      if (!LISTS.every((l) => props.has(l))) continue;
      for (const l of LISTS) if (nt[s.nodes[props.get(l) + tIdx]] === 'object') held += store(props.get(l));
      for (const e of edgesOf(props.get('chains'), 'element')) held += store(properties(to(e)).get('rules'));
    }
    const [three, seven] = probeSizes;
    const slot = (seven - three) / 4;
    let lists = 0;
    let exact = 0;
    for (const f of globalThis.fragments) {
      for (const list of [...LISTS.map((l) => f[l]), ...f.chains.map((c) => c.rules)]) {
        if (list === undefined || list.length === 0) continue;
        lists++;
        exact += three + slot * (list.length - 3);
      }
    }
    process.stdout.write(JSON.stringify({ lists, held, exact }));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', maxBuffer: 1 << 20 }));
}

describe("a fragment's lists", () => {
  it.each(['map', 'chains'] as const)(
    'take the room of their entries and no more (endpoint shape %s)',
    (shape) => {
      const { lists, held, exact } = fragmentListBytes(shape);
      // Several lists per fragment (chains, elements, claim keys, endpoint slots or chains, rules...).
      expect(lists).toBeGreaterThan(2000 * 4);
      expect(held).toBe(exact);
    },
    60_000,
  );
});
