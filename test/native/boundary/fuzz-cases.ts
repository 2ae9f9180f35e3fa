// The fuzz test's seeds and cases. Seeds are valid batches from the real
// encoder: each golden ruleset's full sync (tables, base and regular chains,
// sets and maps with concatenations, intervals and timeouts, elements, a
// flowtable, every statement kind the renderer uses), the same ruleset cut
// into small batches of a few operations (mutations of a short batch hit its
// structure more often), and a batch of the other verbs (delete, destroy,
// flush, create, insert, replace).

import { encodeOperations } from '../../../src/nft/netlink/encode.ts';
import type { NftMap, NftSet, Operation } from '../../../src/nft/objects.ts';
import { planFullSync } from '../../../src/reconciler/full-sync.ts';
import { renderRuleset } from '../../../src/reconciler/ruleset.ts';
import { GOLDENS } from '../../reconciler/goldens.ts';
import { prng, randomBytes, structured, type BatchMap } from './mutate.ts';

const CHUNK = 6;

function otherVerbs(): Operation[] {
  const t = 'knp';
  const set: NftSet = { kind: 'set', family: 'ip', table: t, name: 's', keyType: ['ipv4_addr'], flags: ['interval'] };
  const map: NftMap = { kind: 'map', family: 'ip', table: t, name: 'm', keyType: ['ipv4_addr', 'inet_service'], dataType: 'verdict' };
  const chain = { kind: 'chain', family: 'ip', table: t, name: 'c' } as const;
  return [
    { verb: 'create', object: { kind: 'table', family: 'ip', name: t, comment: 'fuzz' } },
    { verb: 'add', object: chain },
    { verb: 'add', object: set },
    { verb: 'add', object: map },
    { verb: 'add', object: { kind: 'element', family: 'ip', table: t, set: 's', key: ['10.0.0.0/8'], comment: 'range' } },
    {
      verb: 'add',
      object: { kind: 'element', family: 'ip', table: t, set: 'm', key: ['10.0.0.1', '80'], value: { verdict: 'goto', chain: 'c' } },
    },
    { verb: 'insert', object: { kind: 'rule', family: 'ip', table: t, chain: 'c', exprs: [{ kind: 'counter' }], comment: 'first' } },
    {
      verb: 'replace',
      object: { kind: 'rule', family: 'ip', table: t, chain: 'c', handle: 4, exprs: [{ kind: 'verdict', verdict: 'accept' }] },
    },
    { verb: 'delete', object: { kind: 'rule', family: 'ip', table: t, chain: 'c', handle: 5, exprs: [] } },
    { verb: 'delete', object: { kind: 'element', family: 'ip', table: t, set: 'm', key: ['10.0.0.1', '80'] } },
    { verb: 'flush', object: set },
    { verb: 'flush', object: chain },
    { verb: 'destroy', object: map },
    { verb: 'delete', object: chain },
    { verb: 'destroy', object: { kind: 'table', family: 'ip', name: t } },
  ];
}

/** The seed batches: every one valid, from the encoder. */
export function fuzzSeeds(): Uint8Array[] {
  const seeds: Uint8Array[] = [encodeOperations(otherVerbs()).bytes.slice()];
  for (const g of GOLDENS) {
    const ops = planFullSync(renderRuleset(g.ports, g.config), 'replace').ops;
    seeds.push(encodeOperations(ops).bytes.slice());
    const containers = new Map<string, NftSet | NftMap>();
    for (const { object: o } of ops) if (o.kind === 'set' || o.kind === 'map') containers.set(`${o.family} ${o.table} ${o.name}`, o);
    const lookup = (f: string, t: string, n: string) => containers.get(`${f} ${t} ${n}`);
    for (let i = 0; i < ops.length; i += CHUNK) seeds.push(encodeOperations(ops.slice(i, i + CHUNK), lookup).bytes.slice());
  }
  return seeds;
}

/** Case i: a random-bytes mutation for i < randomCases, a structure-aware one after. */
export function makeCase(
  seeds: readonly Uint8Array[],
  maps: readonly BatchMap[],
  randomCases: number,
  base: number,
  i: number,
): { bytes: Uint8Array; what: string } {
  const rand = prng(base + i);
  const s = Math.floor(rand() * seeds.length);
  const made = i < randomCases ? randomBytes(seeds[s]!, rand) : structured(seeds[s]!, maps[s]!, rand);
  return { bytes: made.bytes, what: `seed ${s}: ${made.what}` };
}
