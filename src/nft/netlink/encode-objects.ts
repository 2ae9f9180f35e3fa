// The attributes of the messages that define or name a table, set, map or
// flowtable (the encoder's records for them; rules and elements have their own).

import type { Flowtable, NftMap, NftSet, Table } from '../objects.ts';
import { typeLength } from '../values.ts';
import { comment, commentBytes, dataLength, dataTypeId, keyLength, keyTypeId, withId } from './encode-parts.ts';
import {
  DATA_VERDICT,
  FLOWTABLE_ATTR,
  NETDEV_INGRESS,
  NFT_BYTEORDER_HOST,
  SET_ATTR,
  SET_FLAG,
  TABLE_ATTR,
  UDATA_COMMENT,
  UDATA_SET_KEYBYTEORDER,
} from './kernel-constants.ts';
import type { Attr } from './wire.ts';

function containerFlags(c: NftSet | NftMap): number {
  let f = 0;
  for (const flag of c.flags ?? []) f |= SET_FLAG[flag];
  if (c.kind === 'map') f |= SET_FLAG.map;
  // The kernel wants the concat flag whenever the description lists several fields.
  if (c.keyType.length > 1) f |= SET_FLAG.concat;
  return f;
}

export function tableAttrs(t: Table, defining: boolean): Attr[] {
  const a: Attr[] = [{ id: TABLE_ATTR.NAME, type: 'str', value: t.name }];
  if (defining) a.push(...withId(comment(UDATA_COMMENT.table, t.comment), TABLE_ATTR.USERDATA));
  return a;
}

/**
 * nft's userdata TLVs for a set: the key's byte order where the kernel's type
 * id does not say it (nft would print integer key 1 as 16777216 without it),
 * and the comment.
 */
function setUserdata(c: NftSet | NftMap): Uint8Array | undefined {
  const parts: Uint8Array[] = [];
  if (c.keyType.length === 1 && c.keyType[0] === 'integer') {
    // A little-endian u32 (the hosts we build for), byte by byte: a DataView
    // over `b.buffer` would move this small array off the V8 heap first.
    parts.push(
      Uint8Array.of(
        UDATA_SET_KEYBYTEORDER,
        4,
        NFT_BYTEORDER_HOST & 0xff,
        (NFT_BYTEORDER_HOST >>> 8) & 0xff,
        (NFT_BYTEORDER_HOST >>> 16) & 0xff,
        NFT_BYTEORDER_HOST >>> 24,
      ),
    );
  }
  if (c.comment !== undefined) parts.push(commentBytes(UDATA_COMMENT.set, c.comment));
  if (parts.length === 0) return undefined;
  if (parts.length === 1) return parts[0];
  return Uint8Array.from([...parts[0]!, ...parts[1]!]);
}

export function setAttrs(c: NftSet | NftMap, defining: boolean, id = 0): Attr[] {
  const a: Attr[] = [
    { id: SET_ATTR.TABLE, type: 'str', value: c.table },
    { id: SET_ATTR.NAME, type: 'str', value: c.name },
  ];
  if (!defining) return a;
  // The kernel wants a transaction-unique id on every new set.
  a.push({ id: SET_ATTR.ID, type: 'u32', value: id });
  a.push({ id: SET_ATTR.FLAGS, type: 'u32', value: containerFlags(c) });
  a.push({ id: SET_ATTR.KEY_TYPE, type: 'u32', value: keyTypeId(c.keyType) });
  a.push({ id: SET_ATTR.KEY_LEN, type: 'u32', value: keyLength(c.keyType) });
  if (c.keyType.length > 1) {
    a.push({ id: SET_ATTR.DESC_CONCAT, type: 'bytes', value: Uint8Array.from(c.keyType.map(typeLength)) });
  }
  if (c.kind === 'map') {
    if (c.dataType === 'verdict') {
      a.push({ id: SET_ATTR.DATA_TYPE, type: 'u32', value: DATA_VERDICT });
    } else {
      a.push({ id: SET_ATTR.DATA_TYPE, type: 'u32', value: dataTypeId(c.dataType) });
      a.push({ id: SET_ATTR.DATA_LEN, type: 'u32', value: dataLength(c.dataType) });
    }
  } else if (c.timeout !== undefined) {
    a.push({ id: SET_ATTR.TIMEOUT, type: 'u64', value: BigInt(c.timeout) * 1000n });
  }
  const udata = setUserdata(c);
  if (udata) a.push({ id: SET_ATTR.USERDATA, type: 'bytes', value: udata });
  return a;
}

export function flowtableAttrs(f: Flowtable, withHook: boolean): Attr[] {
  const a: Attr[] = [
    { id: FLOWTABLE_ATTR.TABLE, type: 'str', value: f.table },
    { id: FLOWTABLE_ATTR.NAME, type: 'str', value: f.name },
  ];
  if (!withHook) return a;
  a.push({ id: FLOWTABLE_ATTR.HOOKNUM, type: 'u32', value: NETDEV_INGRESS });
  a.push({ id: FLOWTABLE_ATTR.PRIO, type: 'u32', value: f.priority >>> 0 });
  a.push({ id: FLOWTABLE_ATTR.DEVICES, type: 'strArray', value: f.devices });
  return a;
}
