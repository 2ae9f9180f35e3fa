import { describe, expect, it } from 'vitest';
import { applyLinkBatch, toLinkInfo, type LinkMap } from '../../src/links/link-state.ts';
import type { NativeLinkBatch, NativeLinkRecord } from '../../src/native/link-monitor-types.ts';

const UP = 0x1;
const LOOPBACK = 0x8;
const RUNNING = 0x40;
const LOWER_UP = 0x10000;

function rec(index: number, name: string, extra: Partial<NativeLinkRecord> = {}): NativeLinkRecord {
  return { index, name, flags: 0x1002, kind: 'veth', mtu: 1500, operState: 2, master: 0, ...extra };
}
const lo = rec(1, 'lo', { flags: UP | LOOPBACK | RUNNING | LOWER_UP, kind: '', mtu: 65536, operState: 0 });

function fold(batches: NativeLinkBatch[]): { links: LinkMap | undefined; events: string[] } {
  let links: LinkMap | undefined;
  const events: string[] = [];
  for (const b of batches) {
    const r = applyLinkBatch(links, b);
    links = r.links;
    for (const e of r.events) {
      if (e.type === 'resync') events.push(`resync:${e.reason}`);
      else if (e.type === 'changed') events.push(`changed:${e.link.index}:${e.previous.name}->${e.link.name}`);
      else events.push(`${e.type}:${e.link.index}:${e.link.name}`);
    }
  }
  return { links, events };
}

describe('toLinkInfo', () => {
  it.each([
    { flags: UP | LOOPBACK | RUNNING | LOWER_UP, up: true, loopback: true, running: true, lowerUp: true },
    { flags: 0x1002, up: false, loopback: false, running: false, lowerUp: false },
    { flags: UP | 0x1002, up: true, loopback: false, running: false, lowerUp: false },
    { flags: UP | RUNNING | LOWER_UP, up: true, loopback: false, running: true, lowerUp: true },
  ])('decodes flags $flags', ({ flags, ...want }) => {
    expect(toLinkInfo(rec(3, 'x', { flags }))).toMatchObject({ ...want, flags });
  });

  it('maps an empty kind, master 0 and oper states', () => {
    const info = toLinkInfo(rec(3, 'eth0', { kind: '', master: 0, operState: 6 }));
    expect(info.kind).toBeNull();
    expect(info.master).toBeNull();
    expect(info.operState).toBe('up');
    expect(toLinkInfo(rec(3, 'x', { operState: 99 })).operState).toBe('unknown');
    expect(toLinkInfo(rec(3, 'x', { master: 7 })).master).toBe(7);
  });

  it('keeps the high flag bits unsigned', () => {
    expect(toLinkInfo(rec(3, 'x', { flags: 0x80000000 | UP })).flags).toBe(0x80000001);
  });
});

describe('applyLinkBatch', () => {
  it('the initial snapshot yields a state even when empty, and events for every link', () => {
    expect(fold([{ resync: 'initial', links: [], changes: [] }]).links?.size).toBe(0);
    const { links, events } = fold([{ resync: 'initial', links: [lo, rec(2, 'veth0')], changes: [] }]);
    expect([...links!.keys()]).toEqual([1, 2]);
    expect(events).toEqual(['resync:initial', 'added:1:lo', 'added:2:veth0']);
  });

  it('tracks by index: a rename is a change of the same link', () => {
    const { links, events } = fold([
      { resync: 'initial', links: [lo, rec(2, 'a')], changes: [] },
      { changes: [{ removed: false, link: rec(2, 'b') }] },
    ]);
    expect(links!.get(2)?.name).toBe('b');
    expect(links!.size).toBe(2);
    expect(events.slice(-1)).toEqual(['changed:2:a->b']);
  });

  it('a new link reusing a deleted link name is a different link', () => {
    const { links, events } = fold([
      { resync: 'initial', links: [lo, rec(2, 'a')], changes: [] },
      {
        changes: [
          { removed: true, link: rec(2, 'a') },
          { removed: false, link: rec(3, 'a') },
        ],
      },
    ]);
    expect([...links!.keys()]).toEqual([1, 3]);
    expect(events.slice(-2)).toEqual(['removed:2:a', 'added:3:a']);
  });

  it('drops no-op NEWLINKs and DELLINKs of unknown links, returning the same map', () => {
    const first = applyLinkBatch(undefined, { resync: 'initial', links: [lo, rec(2, 'a')], changes: [] });
    const second = applyLinkBatch(first.links, {
      changes: [
        { removed: false, link: rec(2, 'a') },
        { removed: true, link: rec(9, 'ghost') },
      ],
    });
    expect(second.events).toEqual([]);
    expect(second.links).toBe(first.links);
  });

  it('never mutates its input', () => {
    const first = applyLinkBatch(undefined, { resync: 'initial', links: [lo], changes: [] });
    const before = [...first.links.values()];
    applyLinkBatch(first.links, {
      changes: [
        { removed: false, link: rec(2, 'a') },
        { removed: true, link: lo },
      ],
    });
    applyLinkBatch(first.links, { resync: 'overrun', links: [], changes: [] });
    expect([...first.links.values()]).toEqual(before);
  });

  it('a resync diffs against the old state, then applies the changes queued during the dump', () => {
    const { links, events } = fold([
      { resync: 'initial', links: [lo, rec(2, 'a'), rec(3, 'b')], changes: [] },
      {
        resync: 'overrun',
        links: [lo, rec(3, 'b', { flags: 0x1003 }), rec(4, 'c')],
        changes: [
          { removed: false, link: rec(5, 'd') },
          { removed: true, link: rec(4, 'c') },
        ],
      },
    ]);
    expect([...links!.keys()].sort()).toEqual([1, 3, 5]);
    expect(links!.get(3)?.up).toBe(true);
    expect(events.slice(4)).toEqual(['resync:overrun', 'removed:2:a', 'changed:3:b->b', 'added:4:c', 'added:5:d', 'removed:4:c']);
  });

  it('changes before any snapshot apply to an empty state', () => {
    const { links } = fold([{ changes: [{ removed: false, link: rec(2, 'a') }] }]);
    expect([...links!.keys()]).toEqual([2]);
  });

  it('up/down shows in the up flag', () => {
    const { links, events } = fold([
      { resync: 'initial', links: [lo, rec(2, 'a')], changes: [] },
      { changes: [{ removed: false, link: rec(2, 'a', { flags: 0x1003 | RUNNING | LOWER_UP, operState: 6 }) }] },
    ]);
    expect(links!.get(2)).toMatchObject({ up: true, running: true, lowerUp: true, operState: 'up' });
    expect(events.at(-1)).toBe('changed:2:a->a');
  });
});
