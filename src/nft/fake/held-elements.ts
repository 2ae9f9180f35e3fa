// The fake kernel's answer to ListOptions.elementsEncodedOf: the listed
// elements of those sets held aside (TableListing.encodedElements), wanted
// ones compared with them as the kernel's listing compares them (netlink/
// encoded-elements.ts), by value here where that one compares bytes. Then
// code that adopts a table (reconciler/adopt.ts) runs the same path against
// the fake as against the kernel.

import { type Element, type EncodedElements, heldEncoded, type NftMap, type NftSet, type WantedElements } from '../objects.ts';
import { elementKey } from './state.ts';
import { valueBytes } from '../values.ts';

interface HeldSet {
  readonly container: NftSet | NftMap;
  readonly byKey: Map<string, Element>;
  readonly kept: Set<string>;
}

export class HeldElements implements EncodedElements {
  readonly #sets = new Map<string, HeldSet>();

  /** Holds the elements of `c` when they can be held as the kernel's listing holds them; false when they stay decoded. */
  hold(c: NftSet | NftMap, elements: readonly Element[]): boolean {
    if (!heldEncoded(c)) return false;
    this.#sets.set(c.name, { container: c, byKey: new Map(elements.map((e) => [elementKey(e.key), e])), kept: new Set() });
    return true;
  }

  holds(set: string): boolean {
    return this.#sets.has(set);
  }

  keep(run: WantedElements, i: number): boolean {
    const s = this.#sets.get(run.set);
    if (s === undefined) return false;
    const keyParts = s.container.keyType.length;
    const key: string[] = [];
    for (let p = 0; p < keyParts; p++) key.push(String(run.value(i, p)));
    const k = elementKey(key);
    const e = s.byKey.get(k);
    // A set holds a key once: this is the element, as wanted or not. One with more than its key and data is written again.
    if (e === undefined || s.kept.has(k) || e.timeout !== undefined || e.comment !== undefined) return false;
    if (s.container.kind === 'map') {
      // A held map's data is a concatenation (heldEncoded): one value per part.
      if (!Array.isArray(e.value)) return false;
      for (let p = 0; p < e.value.length; p++) if (String(run.value(i, keyParts + p)) !== e.value[p]) return false;
    }
    s.kept.add(k);
    return true;
  }

  forEachData(set: string, fn: (bytes: Uint8Array, at: number) => void): void {
    const s = this.#sets.get(set);
    if (s === undefined || s.container.kind !== 'map' || !Array.isArray(s.container.dataType)) return;
    const type = s.container.dataType[0]!;
    for (const e of s.byKey.values()) if (Array.isArray(e.value)) fn(valueBytes(type, e.value[0]!), 0);
  }

  notKept(set: string): Element[] {
    const s = this.#sets.get(set);
    if (s === undefined) return [];
    return [...s.byKey].filter(([k]) => !s.kept.has(k)).map(([, e]) => e);
  }
}
