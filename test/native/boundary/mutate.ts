// Deterministic mutations of valid encoded batches (native/libnftnl-glue/batch.h),
// for the fuzz test: random 1-4 byte changes, and structure-aware ones that
// find the batch's fields first (counts, attribute ids, types and lengths,
// record kinds, expression names) and change those, or repeat, drop and move
// whole attributes and records so that the result still parses as far as possible.

/** mulberry32: a small seeded PRNG; the same seed gives the same cases everywhere. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Field =
  | 'recordCount'
  | 'kind'
  | 'msg'
  | 'flags'
  | 'family'
  | 'opIndex'
  | 'attrCount'
  | 'attrId'
  | 'attrType'
  | 'attrLen'
  | 'exprCount'
  | 'nameLen'
  | 'elemCount';

interface Landmark {
  field: Field;
  at: number;
  size: 1 | 2 | 4;
}

/** One attribute list: where its count is and where each attribute starts and ends. */
interface AttrList {
  countAt: number;
  attrs: Array<{ start: number; end: number }>;
}

export interface BatchMap {
  landmarks: Landmark[];
  lists: AttrList[];
  /** Each record's bytes. */
  records: Array<{ start: number; end: number }>;
  /** Expression names: offset of the length byte. */
  names: number[];
}

/** The fields of a valid batch (throws on one that is not). */
export function mapBatch(b: Uint8Array): BatchMap {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const out: BatchMap = { landmarks: [{ field: 'recordCount', at: 8, size: 4 }], lists: [], records: [], names: [] };
  const mark = (field: Field, at: number, size: 1 | 2 | 4) => out.landmarks.push({ field, at, size });
  let p = 12;
  const attrs = (): void => {
    const list: AttrList = { countAt: p, attrs: [] };
    mark('attrCount', p, 2);
    const n = v.getUint16(p, true);
    p += 2;
    for (let i = 0; i < n; i++) {
      const start = p;
      mark('attrId', p, 2);
      mark('attrType', p + 2, 1);
      mark('attrLen', p + 3, 4);
      p += 7 + v.getUint32(p + 3, true);
      list.attrs.push({ start, end: p });
    }
    out.lists.push(list);
  };
  const records = v.getUint32(8, true);
  for (let r = 0; r < records; r++) {
    const start = p;
    const kind = b[p]!;
    mark('kind', p, 1);
    mark('msg', p + 1, 1);
    mark('flags', p + 2, 2);
    mark('family', p + 4, 1);
    mark('opIndex', p + 5, 4);
    p += 9;
    attrs();
    if (kind === 3) {
      mark('exprCount', p, 2);
      const n = v.getUint16(p, true);
      p += 2;
      for (let k = 0; k < n; k++) {
        mark('nameLen', p, 1);
        out.names.push(p);
        p += 1 + b[p]!;
        attrs();
      }
    } else if (kind === 5) {
      mark('elemCount', p, 4);
      const n = v.getUint32(p, true);
      p += 4;
      for (let k = 0; k < n; k++) {
        p += 4;
        attrs();
      }
    }
    out.records.push({ start, end: p });
  }
  if (p !== b.length) throw new Error(`not a valid batch: ${b.length - p} trailing bytes`);
  return out;
}

type Rand = () => number;
const pick = <T>(rand: Rand, list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
const int = (rand: Rand, n: number): number => Math.floor(rand() * n);

/** Values that tend to matter for a field of `size` bytes around its current value. */
function interesting(rand: Rand, size: 1 | 2 | 4, current: number): number {
  const max = size === 1 ? 0xff : size === 2 ? 0xffff : 0xffffffff;
  const choices = [
    0,
    1,
    2,
    3,
    4,
    7,
    8,
    9,
    15,
    16,
    17,
    63,
    64,
    65,
    255,
    256,
    257,
    max,
    max - 1,
    current + 1,
    current - 1,
    current + 4,
    current - 4,
    current * 2,
    int(rand, max + 1),
  ];
  return (pick(rand, choices) >>> 0) & max;
}

function write(b: Uint8Array, at: number, size: 1 | 2 | 4, value: number): void {
  for (let i = 0; i < size; i++) b[at + i] = (value >>> (8 * i)) & 0xff;
}

function read(b: Uint8Array, at: number, size: 1 | 2 | 4): number {
  let v = 0;
  for (let i = 0; i < size; i++) v += b[at + i]! * 2 ** (8 * i);
  return v;
}

/** 1 to 4 random bytes changed: set to a random value, flipped by a bit, or nudged. */
export function randomBytes(seed: Uint8Array, rand: Rand): { bytes: Uint8Array; what: string } {
  const b = seed.slice();
  const n = 1 + int(rand, 4);
  const changes: string[] = [];
  for (let i = 0; i < n; i++) {
    const at = int(rand, b.length);
    const how = int(rand, 3);
    const before = b[at]!;
    b[at] = how === 0 ? int(rand, 256) : how === 1 ? before ^ (1 << int(rand, 8)) : (before + (rand() < 0.5 ? 1 : 255)) & 0xff;
    changes.push(`@${at} ${before}->${b[at]}`);
  }
  return { bytes: b, what: `bytes ${changes.join(', ')}` };
}

const EXPRESSION_NAMES = [
  'payload',
  'cmp',
  'bitwise',
  'meta',
  'ct',
  'lookup',
  'immediate',
  'nat',
  'masq',
  'numgen',
  'counter',
  'reject',
  'fib',
  'dynset',
  'flow_offload',
  'byteorder',
  'notrack',
  'log',
  'limit',
  'queue',
];

function splice(b: Uint8Array, at: number, remove: number, insert: Uint8Array): Uint8Array {
  const out = new Uint8Array(b.length - remove + insert.length);
  out.set(b.subarray(0, at));
  out.set(insert, at);
  out.set(b.subarray(at + remove), at + insert.length);
  return out;
}

/** One structure-aware change to a valid batch. */
export function structured(seed: Uint8Array, map: BatchMap, rand: Rand): { bytes: Uint8Array; what: string } {
  const lists = map.lists.filter((l) => l.attrs.length > 0);
  const how = int(rand, 11);
  if (how === 10) {
    // A whole record repeated (the same operation twice, nested lists and all) or dropped.
    const rec = pick(rand, map.records);
    const count = read(seed, 8, 4);
    const repeat = rand() < 0.5;
    const b = repeat
      ? splice(seed, rec.end, 0, seed.slice(rec.start, rec.end))
      : splice(seed, rec.start, rec.end - rec.start, new Uint8Array(0));
    write(b, 8, 4, repeat ? count + 1 : count - 1);
    return { bytes: b, what: `${repeat ? 'repeat' : 'drop'} record @${rec.start}` };
  }
  if (how <= 4 || lists.length === 0) {
    // A field set to a value that matters: lengths, counts, ids, types, kinds.
    const b = seed.slice();
    const m = pick(rand, map.landmarks);
    const before = read(b, m.at, m.size);
    const after =
      m.field === 'attrType' ? int(rand, 9) : m.field === 'attrId' && rand() < 0.5 ? int(rand, 40) : interesting(rand, m.size, before);
    write(b, m.at, m.size, after);
    return { bytes: b, what: `${m.field}@${m.at} ${before}->${after}` };
  }
  const list = pick(rand, lists);
  const attr = pick(rand, list.attrs);
  const count = read(seed, list.countAt, 2);
  if (how === 5) {
    // An attribute repeated in its list.
    const b = splice(seed, attr.end, 0, seed.slice(attr.start, attr.end));
    write(b, list.countAt, 2, count + 1);
    return { bytes: b, what: `repeat attribute @${attr.start}` };
  }
  if (how === 6) {
    // An attribute dropped from its list.
    const b = splice(seed, attr.start, attr.end - attr.start, new Uint8Array(0));
    write(b, list.countAt, 2, count - 1);
    return { bytes: b, what: `drop attribute @${attr.start}` };
  }
  if (how === 7) {
    // An attribute moved into another list (another object kind or expression).
    const to = pick(rand, map.lists);
    if (to.countAt === list.countAt) return { bytes: seed.slice(), what: 'unchanged' };
    const moved = seed.slice(attr.start, attr.end);
    let b = splice(seed, attr.start, attr.end - attr.start, new Uint8Array(0));
    write(b, list.countAt, 2, count - 1);
    const toCountAt = to.countAt > attr.start ? to.countAt - moved.length : to.countAt;
    const toCount = read(b, toCountAt, 2);
    b = splice(b, toCountAt + 2, 0, moved);
    write(b, toCountAt, 2, toCount + 1);
    return { bytes: b, what: `move attribute @${attr.start} to list @${to.countAt}` };
  }
  if (how === 8 && map.names.length > 0) {
    // An expression renamed: its attributes now meet another expression's rules.
    const at = pick(rand, map.names);
    const name = pick(rand, EXPRESSION_NAMES);
    const ins = Uint8Array.from([name.length, ...Buffer.from(name, 'latin1')]);
    return { bytes: splice(seed, at, 1 + seed[at]!, ins), what: `rename expression @${at} to ${name}` };
  }
  // A value resized in place: its length field and bytes agree, the length is new.
  const len = read(seed, attr.start + 3, 4);
  const newLen = pick(rand, [0, 1, 2, 3, 5, 7, 9, 15, 16, 17, 63, 64, 65, 255, 256, 257, 300, len + 1, len * 2]);
  const value = new Uint8Array(newLen);
  for (let i = 0; i < newLen; i++) value[i] = i < len ? seed[attr.start + 7 + i]! : int(rand, 256);
  const b = splice(seed, attr.start + 7, len, value);
  write(b, attr.start + 3, 4, newLen);
  return { bytes: b, what: `resize attribute @${attr.start} ${len}->${newLen}` };
}
