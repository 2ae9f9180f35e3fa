// The rendered text is valid nft and means what the objects mean: load it with
// `nft -f` in a fresh network namespace (the CLI is a test oracle only) and read
// the ruleset back with `nft -j list ruleset`.

import { describe, expect, it } from 'vitest';
import type { TableListing } from '../../src/nft/dataplane.ts';
import type { Element, NftMap, NftObject, NftSet, Operation, Rule } from '../../src/nft/objects.ts';
import { renderOperations, renderTableText } from '../../src/nft/render-text.ts';
import { Transaction } from '../../src/nft/transaction.ts';
import { withNetns, type NetNs } from '../helpers/netns.ts';
import { chain, chains, el, elements, F, flowtable, representativeObjects, rule, rules, sets, T, table } from './fixtures.ts';
import { asNftLists, listingFromNftJson, withoutHandles } from './nft-json.ts';

function listingOf(objs: NftObject[]): TableListing {
  return {
    table: objs.find((o) => o.kind === 'table') as TableListing['table'],
    chains: objs.filter((o) => o.kind === 'chain'),
    rules: objs.filter((o): o is Rule => o.kind === 'rule'),
    sets: objs.filter((o): o is NftSet | NftMap => o.kind === 'set' || o.kind === 'map'),
    elements: objs.filter((o): o is Element => o.kind === 'element'),
    flowtables: [],
  };
}

function load(ns: NetNs, script: string): void {
  const r = ns.tryExec('nft', ['-f', '-'], { input: script });
  if (r.status !== 0) throw new Error(`nft -f failed (${r.status}): ${r.stderr}\n--- script ---\n${script}`);
}

const readBack = (ns: NetNs) => withoutHandles(listingFromNftJson(ns.nftJson(), F, T)!);

describe('render-text against nft (oracle)', () => {
  it('the representative ruleset loads and lists back as rendered', async () => {
    const objs = representativeObjects({ flowtable: false });
    const tx = new Transaction();
    for (const o of objs) tx.add(o);
    const script = renderOperations(tx.ops());
    await withNetns((ns) => {
      load(ns, script);
      expect(readBack(ns)).toEqual(asNftLists(listingOf(objs)));
      // JSON leaves out the dynamic flag; the text listing shows it.
      expect(ns.exec('nft', ['list', 'set', F, T, sets[5]!.name])).toContain('flags dynamic,timeout');
      // ... and the table and chain comments.
      const text = ns.exec('nft', ['list', 'table', F, T]);
      expect(text).toContain('comment "rules for kube-nft-proxy"');
      expect(text).toMatch(/chain service-ULMVA6XW-ns1\/svc1\/tcp\/p80 \{\n\t\tcomment "ns1\/svc1:p80"/);
    });
  });

  it('the table block form loads too and lists back the same', async () => {
    const objs = representativeObjects({ flowtable: false });
    await withNetns((ns) => {
      load(ns, renderTableText(listingOf(objs)));
      expect(readBack(ns)).toEqual(asNftLists(listingOf(objs)));
    });
  });

  it('every verb nft 1.0.6 knows does what the text says', async () => {
    const objs = representativeObjects({ flowtable: false });
    await withNetns((ns) => {
      load(ns, renderOperations(objs.map((object) => ({ verb: 'add', object }))));
      const handles = listingFromNftJson(ns.nftJson(), F, T)!
        .rules.filter((r) => r.chain === 'filter-input')
        .map((r) => r.handle!);
      const svcRules = rules.filter((r) => r.chain === 'filter-input');
      const newRule = rule('filter-input', [{ kind: 'counter' }], { comment: 'prepended' });
      const replacement = rule('filter-input', [
        { kind: 'match', left: { kind: 'meta', key: 'l4proto' }, op: '==', right: 'udp' },
        { kind: 'verdict', verdict: 'drop' },
      ]);
      const ops: Operation[] = [
        { verb: 'insert', object: newRule },
        { verb: 'replace', object: { ...replacement, handle: handles[1] } },
        { verb: 'delete', object: { ...svcRules[2]!, handle: handles[2] } },
        { verb: 'delete', object: elements[0]! },
        { verb: 'create', object: el('cluster-ips', ['172.30.0.99']) },
        { verb: 'flush', object: sets.find((s) => s.name === 'nodeport-ips')! },
        { verb: 'flush', object: chain('firewall-check') },
        { verb: 'delete', object: sets.find((s) => s.name === 'lb-source-ranges')! },
        { verb: 'create', object: chain('brand-new') },
        { verb: 'add', object: table }, // idempotent
      ];
      const tx = new Transaction();
      for (const s of sets) tx.knownContainer(s);
      for (const op of ops) tx.queue(op.verb, op.object);
      load(ns, renderOperations(tx.ops(), sets));

      const inputRules = svcRules.map((r, i) => (i === 1 ? replacement : r)).filter((_r, i) => i !== 2);
      const want = listingOf([
        table,
        ...chains,
        chain('brand-new'),
        ...sets.filter((s) => s.name !== 'lb-source-ranges'),
        ...elements.filter((e, i) => i !== 0 && e.set !== 'nodeport-ips' && e.set !== 'lb-source-ranges'),
        el('cluster-ips', ['172.30.0.99']),
        ...rules.filter(
          (r) => r.chain !== 'filter-input' && r.chain !== 'firewall-check' && !r.exprs.some((s) => s.kind === 'flow-offload'),
        ),
        newRule,
        ...inputRules,
      ]);
      expect(readBack(ns)).toEqual(asNftLists(want));

      // flush table empties chains but keeps elements; delete table removes everything.
      load(ns, renderOperations([{ verb: 'flush', object: table }]));
      expect(readBack(ns)).toEqual(asNftLists({ ...want, rules: [] }));
      load(ns, renderOperations([{ verb: 'delete', object: table }]));
      expect(listingFromNftJson(ns.nftJson(), F, T)).toBeUndefined();
    });
  });

  it.each([
    ['ip', '10.0.0.1', 'ip saddr', '10.0.0.0/8', 'icmp port-unreachable'],
    ['ip6', 'fd00::1', 'ip6 saddr', 'fd00::/8', 'icmpv6 port-unreachable'],
  ] as const)('a %s table (NAT without a family word, family rejects)', async (family, addr, field, prefix, reject) => {
    const objs: NftObject[] = [
      { kind: 'table', family, name: T },
      { kind: 'chain', family, table: T, name: 'in', base: { type: 'filter', hook: 'input', priority: 0, policy: 'accept' } },
      { kind: 'chain', family, table: T, name: 'post', base: { type: 'nat', hook: 'postrouting', priority: 100, policy: 'accept' } },
      { kind: 'chain', family, table: T, name: 'pre', base: { type: 'nat', hook: 'prerouting', priority: -100, policy: 'accept' } },
      { kind: 'rule', family, table: T, chain: 'in', exprs: [{ kind: 'reject', with: reject }] },
      {
        kind: 'rule',
        family,
        table: T,
        chain: 'post',
        exprs: [
          { kind: 'match', left: { kind: 'meta', key: 'l4proto' }, op: '==', right: 'udp' },
          { kind: 'snat', addr, port: 53 },
        ],
      },
      {
        kind: 'rule',
        family,
        table: T,
        chain: 'pre',
        exprs: [
          { kind: 'match', left: { kind: 'payload', field }, op: '==', right: prefix },
          { kind: 'match', left: { kind: 'meta', key: 'l4proto' }, op: '==', right: 'tcp' },
          { kind: 'dnat', addr, port: 80 },
        ],
      },
    ];
    const tx = new Transaction();
    for (const o of objs) tx.add(o);
    await withNetns((ns) => {
      load(ns, renderOperations(tx.ops()));
      expect(withoutHandles(listingFromNftJson(ns.nftJson(), family, T)!)).toEqual(asNftLists(listingOf(objs)));
    });
  });

  it("flowtable text passes nft's parser; only the kernel refuses it (no CONFIG_NF_FLOW_TABLE)", async () => {
    // nft -c sends the batch without committing: a syntax error would stop nft
    // before the kernel; here the kernel answers ENOENT for the flowtable itself.
    const script = renderOperations([
      { verb: 'add', object: table },
      { verb: 'add', object: chain('filter-forward', { type: 'filter', hook: 'forward', priority: 0 }) },
      { verb: 'add', object: flowtable },
      { verb: 'add', object: rules.find((r) => r.exprs.some((s) => s.kind === 'flow-offload'))! },
    ]);
    await withNetns((ns) => {
      const ok = ns.tryExec('nft', ['-c', '-f', '-'], { input: script });
      expect(ok.status).not.toBe(0);
      expect(ok.stderr).toContain('Could not process rule: No such file or directory');
      expect(ok.stderr).toMatch(/add flowtable inet kube-nft-proxy kube-proxy-flowtable/);
      expect(ok.stderr).not.toContain('syntax error');
      // The same check does tell a syntax error apart.
      const bad = ns.tryExec('nft', ['-c', '-f', '-'], { input: script.replace('hook ingress', 'hook ingres') });
      expect(bad.stderr).toContain('syntax error');
    });
  });
});
