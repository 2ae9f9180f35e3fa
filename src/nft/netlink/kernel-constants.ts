// Numbers the kernel (nf_tables uapi) and libnftnl (attribute ids) define.
// The addon receives and returns libnftnl attribute ids, so every number that
// gives meaning to a byte crossing the boundary lives here, in one place.

import type { ChainHook, DataType, Family } from '../objects.ts';

export const FAMILY_NUMBER: Readonly<Record<Family, number>> = { inet: 1, ip: 2, ip6: 10 };

/** NFT_MSG_* (DESTROY* arrived in Linux 6.3; Debian 12's uapi headers lack them). */
export const MSG = {
  NEWTABLE: 0,
  DELTABLE: 2,
  NEWCHAIN: 3,
  DELCHAIN: 5,
  NEWRULE: 6,
  DELRULE: 8,
  NEWSET: 9,
  DELSET: 11,
  NEWSETELEM: 12,
  DELSETELEM: 14,
  NEWFLOWTABLE: 22,
  DELFLOWTABLE: 24,
  DESTROYTABLE: 26,
  DESTROYCHAIN: 27,
  DESTROYRULE: 28,
  DESTROYSET: 29,
  DESTROYSETELEM: 30,
  DESTROYFLOWTABLE: 32,
} as const;

export const NLM_F = { REPLACE: 0x100, EXCL: 0x200, CREATE: 0x400, APPEND: 0x800 } as const;

/** Object kinds of the batch and listing encodings (native/libnftnl-glue/batch.h). */
export const KIND = { table: 1, chain: 2, rule: 3, set: 4, elements: 5, flowtable: 6 } as const;

/** Attribute value types of the encodings. */
export const AT = { u8: 1, u16: 2, u32: 3, u64: 4, str: 5, bytes: 6, strArray: 7 } as const;
export type AttrType = keyof typeof AT;

export const TABLE_ATTR = { NAME: 0, FAMILY: 1, FLAGS: 2, USE: 3, HANDLE: 4, USERDATA: 5 } as const;
export const CHAIN_ATTR = {
  NAME: 0,
  FAMILY: 1,
  TABLE: 2,
  HOOKNUM: 3,
  PRIO: 4,
  POLICY: 5,
  USE: 6,
  BYTES: 7,
  PACKETS: 8,
  HANDLE: 9,
  TYPE: 10,
  DEV: 11,
  DEVICES: 12,
  FLAGS: 13,
  ID: 14,
  USERDATA: 15,
} as const;
export const RULE_ATTR = { FAMILY: 0, TABLE: 1, CHAIN: 2, HANDLE: 3, POSITION: 6, USERDATA: 7 } as const;
export const SET_ATTR = {
  TABLE: 0,
  NAME: 1,
  FLAGS: 2,
  KEY_TYPE: 3,
  KEY_LEN: 4,
  DATA_TYPE: 5,
  DATA_LEN: 6,
  FAMILY: 7,
  ID: 8,
  POLICY: 9,
  DESC_SIZE: 10,
  TIMEOUT: 11,
  GC_INTERVAL: 12,
  USERDATA: 13,
  OBJ_TYPE: 14,
  HANDLE: 15,
  DESC_CONCAT: 16,
} as const;
export const ELEM_ATTR = {
  FLAGS: 0,
  KEY: 1,
  VERDICT: 2,
  CHAIN: 3,
  DATA: 4,
  TIMEOUT: 5,
  EXPIRATION: 6,
  USERDATA: 7,
  OBJREF: 9,
  KEY_END: 10,
} as const;
export const FLOWTABLE_ATTR = {
  NAME: 0,
  FAMILY: 1,
  TABLE: 2,
  HOOKNUM: 3,
  PRIO: 4,
  USE: 5,
  DEVICES: 6,
  SIZE: 7,
  FLAGS: 8,
  HANDLE: 9,
} as const;

export const SET_FLAG = {
  anonymous: 0x1,
  constant: 0x2,
  interval: 0x4,
  map: 0x8,
  timeout: 0x10,
  dynamic: 0x20,
  object: 0x40,
  concat: 0x80,
} as const;
export const ELEM_FLAG_INTERVAL_END = 0x1;

/** nft's datatype ids, which is what `nft list` reads from a set's key type. */
export const TYPE_ID: Readonly<Record<DataType, number>> = {
  verdict: 1,
  integer: 4,
  ipv4_addr: 7,
  ipv6_addr: 8,
  inet_proto: 12,
  inet_service: 13,
  mark: 19,
  ifname: 41,
};
export const TYPE_BY_ID: Readonly<Record<number, DataType>> = Object.fromEntries(
  Object.entries(TYPE_ID).map(([k, v]) => [v, k as DataType]),
);
/** Bits per part in a concatenated key type id. */
export const TYPE_BITS = 6;
export const DATA_VERDICT = 0xffffff00;

/** nft's set udata TLV for the key's byte order, and its value for host order (nft's enum byteorder). */
export const UDATA_SET_KEYBYTEORDER = 0;
export const NFT_BYTEORDER_HOST = 1;

/** nft's udata TLV types for comments. */
export const UDATA_COMMENT = { table: 0, chain: 0, rule: 0, set: 7, element: 0 } as const;

export const HOOK_NUMBER: Readonly<Record<ChainHook, number>> = {
  prerouting: 0,
  input: 1,
  forward: 2,
  output: 3,
  postrouting: 4,
  ingress: 5,
};
export const NETDEV_INGRESS = 0;

/** Verdict codes (netfilter NF_* and NFT_*). */
export const VERDICT_CODE = { drop: 0, accept: 1, continue: -1, jump: -3, goto: -4, return: -5 } as const;

export const REG = { VERDICT: 0, R1: 1, R2: 2, R32_00: 8 } as const;
export const CMP_OP = { '==': 0, '!=': 1, '<': 2, '<=': 3, '>': 4, '>=': 5 } as const;
export const PAYLOAD_BASE = { link: 0, network: 1, transport: 2 } as const;
export const META_KEY = { mark: 3, iif: 4, oif: 5, iifname: 6, oifname: 7, nfproto: 15, l4proto: 16 } as const;
export const CT_KEY = { state: 0, status: 2, mark: 3, packets: 14, bytes: 15, src_ip: 19, dst_ip: 20, src_ip6: 21, dst_ip6: 22 } as const;
export const CT_DIR = { original: 0, reply: 1 } as const;
export const NAT_TYPE = { snat: 0, dnat: 1 } as const;
/** The range flags the kernel derives for a nat from the registers it is given. */
export const NAT_RANGE_MAP_IPS = 0x1;
export const NAT_RANGE_PROTO_SPECIFIED = 0x2;
export const NAT_RANGE_PROTO_RANDOM_FULLY = 0x10;
export const REJECT_TYPE = { icmp: 0, tcpRst: 1, icmpx: 2 } as const;
export const FIB_RESULT_ADDRTYPE = 3;
export const FIB_F = { saddr: 1, daddr: 2 } as const;
export const NUMGEN_RANDOM = 1;
export const DYNSET_OP = { add: 0, update: 1 } as const;
export const LOOKUP_F_INV = 1;
export const BYTEORDER_HTON = 1;
export const NFPROTO = { ipv4: 2, ipv6: 10 } as const;
export const CT_STATE_BIT = { invalid: 1, established: 2, related: 4, new: 8, untracked: 64 } as const;
export const CT_STATUS_BIT = {
  expected: 1,
  'seen-reply': 2,
  assured: 4,
  confirmed: 8,
  snat: 16,
  dnat: 32,
  dying: 512,
} as const;
