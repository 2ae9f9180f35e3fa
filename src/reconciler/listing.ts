// A ruleset as the table listings the dataplane's `list()` returns: what
// `--dry-run` prints (through src/nft/render-text.ts) and what tests compare
// with the kernel's (or the fake's) own listing.

import type { TableListing } from '../nft/dataplane.ts';
import type { Chain, Element, Family, Flowtable, NftMap, NftSet, Rule } from '../nft/objects.ts';
import type { Fragment } from './fragment.ts';
import { forEachElement, type Ruleset } from './ruleset.ts';

const byName = <T extends { name: string }>(a: T, b: T): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function elementOrder(a: Element, b: Element): number {
  const x = `${a.set}\0${a.key.join('\0')}`;
  const y = `${b.set}\0${b.key.join('\0')}`;
  return x < y ? -1 : x > y ? 1 : 0;
}

export function rulesetListings(r: Ruleset): TableListing[] {
  const frags: Fragment[] = [...r.skeletons.values(), ...[...r.services.values()].map((s) => s.fragment)];
  return r.tables.map((table) => {
    const mine = (o: { family: Family; table: string }): boolean => o.family === table.family && o.table === table.name;
    const chains: Chain[] = [];
    const rules: Rule[] = [];
    const sets: Array<NftSet | NftMap> = [];
    const flowtables: Flowtable[] = [];
    const specs = frags.flatMap((f) => f.chains.filter((c) => mine(c.chain)));
    specs.sort((a, b) => byName(a.chain, b.chain));
    for (const s of specs) {
      chains.push(s.chain);
      rules.push(...s.rules);
    }
    for (const f of frags) {
      sets.push(...f.sets.filter(mine));
      flowtables.push(...f.flowtables.filter(mine));
    }
    const elements: Element[] = [];
    forEachElement(r, (e) => {
      if (mine(e)) elements.push(e);
    });
    return { table, chains, rules, sets: sets.sort(byName), elements: elements.sort(elementOrder), flowtables: flowtables.sort(byName) };
  });
}
