// The allow-list itself, read off libnftnl 1.2.4: each object's *_set_data
// (its *_validate table asserts the length of fixed-size attributes; the
// rest memcpy sizeof(field) from whatever they are given) and each
// expression's *_set. Integers take exactly their field's size; strings are
// names (the kernel's NFT_NAME_MAXLEN - 1); byte values go into
// NFT_DATA_VALUE_MAXLEN (64) byte fields; user data is NFT_USERDATA_MAXLEN
// (256). Attributes that carry pointers to other libnftnl objects
// (NFTNL_*_EXPR, _EXPRESSIONS) are never allowed.
#include "attr-rules.h"

#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/flowtable.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include <cstring>
#include <iterator>

namespace knp {

namespace {

constexpr uint32_t kName = kMaxNameLength;
constexpr uint32_t kValue = 64;      // NFT_DATA_VALUE_MAXLEN
constexpr uint32_t kUserdata = 256;  // NFT_USERDATA_MAXLEN
// Device lists: the kernel takes at most 256 devices (NFT_NETDEVICE_MAX) of
// fewer than IFNAMSIZ (16) bytes; encoded as u16 count, { u16 len, bytes }.
constexpr uint32_t kDevices = 2 + 256 * (2 + 15);
// libnftnl scans the concat field lengths for the first zero from index 1
// of a 16-byte array: with all 16 set it reads past the array.
constexpr uint32_t kConcatFields = 15;

constexpr AttrType U8 = AttrType::U8;
constexpr AttrType U32 = AttrType::U32;
constexpr AttrType U64 = AttrType::U64;
constexpr AttrType Str = AttrType::Str;
constexpr AttrType Bytes = AttrType::Bytes;
constexpr AttrType StrArray = AttrType::StrArray;

constexpr uint64_t Bit(int id) { return uint64_t(1) << id; }

constexpr AttrRule kTable[] = {
    {NFTNL_TABLE_NAME, Str, kName},      {NFTNL_TABLE_FAMILY, U32, 0}, {NFTNL_TABLE_FLAGS, U32, 0},
    {NFTNL_TABLE_USE, U32, 0},           {NFTNL_TABLE_HANDLE, U64, 0}, {NFTNL_TABLE_USERDATA, Bytes, kUserdata},
    {NFTNL_TABLE_OWNER, U32, 0},
};

constexpr AttrRule kChain[] = {
    {NFTNL_CHAIN_NAME, Str, kName},          {NFTNL_CHAIN_FAMILY, U32, 0},  {NFTNL_CHAIN_TABLE, Str, kName},
    {NFTNL_CHAIN_HOOKNUM, U32, 0},           {NFTNL_CHAIN_PRIO, U32, 0},    {NFTNL_CHAIN_POLICY, U32, 0},
    {NFTNL_CHAIN_USE, U32, 0},               {NFTNL_CHAIN_BYTES, U64, 0},   {NFTNL_CHAIN_PACKETS, U64, 0},
    {NFTNL_CHAIN_HANDLE, U64, 0},            {NFTNL_CHAIN_TYPE, Str, kName}, {NFTNL_CHAIN_DEV, Str, kName},
    {NFTNL_CHAIN_DEVICES, StrArray, kDevices}, {NFTNL_CHAIN_FLAGS, U32, 0},  {NFTNL_CHAIN_ID, U32, 0},
    {NFTNL_CHAIN_USERDATA, Bytes, kUserdata},
};

constexpr AttrRule kRule[] = {
    {NFTNL_RULE_FAMILY, U32, 0},        {NFTNL_RULE_TABLE, Str, kName},          {NFTNL_RULE_CHAIN, Str, kName},
    {NFTNL_RULE_HANDLE, U64, 0},        {NFTNL_RULE_COMPAT_PROTO, U32, 0},       {NFTNL_RULE_COMPAT_FLAGS, U32, 0},
    {NFTNL_RULE_POSITION, U64, 0},      {NFTNL_RULE_USERDATA, Bytes, kUserdata}, {NFTNL_RULE_ID, U32, 0},
    {NFTNL_RULE_POSITION_ID, U32, 0},
};

constexpr AttrRule kSet[] = {
    {NFTNL_SET_TABLE, Str, kName},          {NFTNL_SET_NAME, Str, kName},     {NFTNL_SET_FLAGS, U32, 0},
    {NFTNL_SET_KEY_TYPE, U32, 0},           {NFTNL_SET_KEY_LEN, U32, 0},      {NFTNL_SET_DATA_TYPE, U32, 0},
    {NFTNL_SET_DATA_LEN, U32, 0},           {NFTNL_SET_FAMILY, U32, 0},       {NFTNL_SET_ID, U32, 0},
    {NFTNL_SET_POLICY, U32, 0},             {NFTNL_SET_DESC_SIZE, U32, 0},    {NFTNL_SET_TIMEOUT, U64, 0},
    {NFTNL_SET_GC_INTERVAL, U32, 0},        {NFTNL_SET_USERDATA, Bytes, kUserdata}, {NFTNL_SET_OBJ_TYPE, U32, 0},
    {NFTNL_SET_HANDLE, U64, 0},             {NFTNL_SET_DESC_CONCAT, Bytes, kConcatFields, 0, 12},
};

constexpr AttrRule kFlowtable[] = {
    {NFTNL_FLOWTABLE_NAME, Str, kName},  {NFTNL_FLOWTABLE_FAMILY, U32, 0},           {NFTNL_FLOWTABLE_TABLE, Str, kName},
    {NFTNL_FLOWTABLE_HOOKNUM, U32, 0},   {NFTNL_FLOWTABLE_PRIO, U32, 0},             {NFTNL_FLOWTABLE_USE, U32, 0},
    {NFTNL_FLOWTABLE_DEVICES, StrArray, kDevices}, {NFTNL_FLOWTABLE_SIZE, U32, 0},   {NFTNL_FLOWTABLE_FLAGS, U32, 0},
    {NFTNL_FLOWTABLE_HANDLE, U64, 0},
};

// The element's chain name and data value share one union: data would
// overwrite the chain pointer that libnftnl frees when the attribute is unset.
constexpr AttrRule kElement[] = {
    {NFTNL_SET_ELEM_FLAGS, U32, 0},
    {NFTNL_SET_ELEM_KEY, Bytes, kValue},
    {NFTNL_SET_ELEM_VERDICT, U32, 0, Bit(NFTNL_SET_ELEM_DATA)},
    {NFTNL_SET_ELEM_CHAIN, Str, kName, Bit(NFTNL_SET_ELEM_DATA)},
    {NFTNL_SET_ELEM_DATA, Bytes, kValue, Bit(NFTNL_SET_ELEM_CHAIN) | Bit(NFTNL_SET_ELEM_VERDICT)},
    {NFTNL_SET_ELEM_TIMEOUT, U64, 0},
    {NFTNL_SET_ELEM_EXPIRATION, U64, 0},
    {NFTNL_SET_ELEM_USERDATA, Bytes, kUserdata},
    {NFTNL_SET_ELEM_OBJREF, Str, kName},
    {NFTNL_SET_ELEM_KEY_END, Bytes, kValue},
};

constexpr AttrRule kPayload[] = {
    {NFTNL_EXPR_PAYLOAD_DREG, U32, 0},      {NFTNL_EXPR_PAYLOAD_BASE, U32, 0},        {NFTNL_EXPR_PAYLOAD_OFFSET, U32, 0},
    {NFTNL_EXPR_PAYLOAD_LEN, U32, 0},       {NFTNL_EXPR_PAYLOAD_SREG, U32, 0},        {NFTNL_EXPR_PAYLOAD_CSUM_TYPE, U32, 0},
    {NFTNL_EXPR_PAYLOAD_CSUM_OFFSET, U32, 0}, {NFTNL_EXPR_PAYLOAD_FLAGS, U32, 0},
};
constexpr AttrRule kCmp[] = {
    {NFTNL_EXPR_CMP_SREG, U32, 0}, {NFTNL_EXPR_CMP_OP, U32, 0}, {NFTNL_EXPR_CMP_DATA, Bytes, kValue},
};
constexpr AttrRule kBitwise[] = {
    {NFTNL_EXPR_BITWISE_SREG, U32, 0},         {NFTNL_EXPR_BITWISE_DREG, U32, 0},
    {NFTNL_EXPR_BITWISE_LEN, U32, 0},          {NFTNL_EXPR_BITWISE_MASK, Bytes, kValue},
    {NFTNL_EXPR_BITWISE_XOR, Bytes, kValue},   {NFTNL_EXPR_BITWISE_OP, U32, 0},
    {NFTNL_EXPR_BITWISE_DATA, Bytes, kValue},
};
constexpr AttrRule kMeta[] = {
    {NFTNL_EXPR_META_KEY, U32, 0}, {NFTNL_EXPR_META_DREG, U32, 0}, {NFTNL_EXPR_META_SREG, U32, 0},
};
constexpr AttrRule kCt[] = {
    {NFTNL_EXPR_CT_DREG, U32, 0}, {NFTNL_EXPR_CT_KEY, U32, 0}, {NFTNL_EXPR_CT_DIR, U8, 0}, {NFTNL_EXPR_CT_SREG, U32, 0},
};
constexpr AttrRule kLookup[] = {
    {NFTNL_EXPR_LOOKUP_SREG, U32, 0},   {NFTNL_EXPR_LOOKUP_DREG, U32, 0},  {NFTNL_EXPR_LOOKUP_SET, Str, kName},
    {NFTNL_EXPR_LOOKUP_SET_ID, U32, 0}, {NFTNL_EXPR_LOOKUP_FLAGS, U32, 0},
};
// Data and verdict share one union, and libnftnl frees the chain pointer of
// a jump or goto verdict: data next to a verdict or chain would forge it.
constexpr AttrRule kImmediate[] = {
    {NFTNL_EXPR_IMM_DREG, U32, 0},
    {NFTNL_EXPR_IMM_DATA, Bytes, kValue, Bit(NFTNL_EXPR_IMM_VERDICT) | Bit(NFTNL_EXPR_IMM_CHAIN) | Bit(NFTNL_EXPR_IMM_CHAIN_ID)},
    {NFTNL_EXPR_IMM_VERDICT, U32, 0, Bit(NFTNL_EXPR_IMM_DATA)},
    {NFTNL_EXPR_IMM_CHAIN, Str, kName, Bit(NFTNL_EXPR_IMM_DATA)},
    {NFTNL_EXPR_IMM_CHAIN_ID, U32, 0, Bit(NFTNL_EXPR_IMM_DATA)},
};
constexpr AttrRule kNat[] = {
    {NFTNL_EXPR_NAT_TYPE, U32, 0},          {NFTNL_EXPR_NAT_FAMILY, U32, 0},        {NFTNL_EXPR_NAT_REG_ADDR_MIN, U32, 0},
    {NFTNL_EXPR_NAT_REG_ADDR_MAX, U32, 0},  {NFTNL_EXPR_NAT_REG_PROTO_MIN, U32, 0}, {NFTNL_EXPR_NAT_REG_PROTO_MAX, U32, 0},
    {NFTNL_EXPR_NAT_FLAGS, U32, 0},
};
constexpr AttrRule kMasq[] = {
    {NFTNL_EXPR_MASQ_FLAGS, U32, 0}, {NFTNL_EXPR_MASQ_REG_PROTO_MIN, U32, 0}, {NFTNL_EXPR_MASQ_REG_PROTO_MAX, U32, 0},
};
constexpr AttrRule kNumgen[] = {
    {NFTNL_EXPR_NG_DREG, U32, 0}, {NFTNL_EXPR_NG_MODULUS, U32, 0}, {NFTNL_EXPR_NG_TYPE, U32, 0}, {NFTNL_EXPR_NG_OFFSET, U32, 0},
};
constexpr AttrRule kCounter[] = {{NFTNL_EXPR_CTR_PACKETS, U64, 0}, {NFTNL_EXPR_CTR_BYTES, U64, 0}};
constexpr AttrRule kReject[] = {{NFTNL_EXPR_REJECT_TYPE, U32, 0}, {NFTNL_EXPR_REJECT_CODE, U8, 0}};
constexpr AttrRule kFib[] = {{NFTNL_EXPR_FIB_DREG, U32, 0}, {NFTNL_EXPR_FIB_RESULT, U32, 0}, {NFTNL_EXPR_FIB_FLAGS, U32, 0}};
constexpr AttrRule kDynset[] = {
    {NFTNL_EXPR_DYNSET_SREG_KEY, U32, 0}, {NFTNL_EXPR_DYNSET_SREG_DATA, U32, 0}, {NFTNL_EXPR_DYNSET_OP, U32, 0},
    {NFTNL_EXPR_DYNSET_TIMEOUT, U64, 0},  {NFTNL_EXPR_DYNSET_SET_NAME, Str, kName}, {NFTNL_EXPR_DYNSET_SET_ID, U32, 0},
    {NFTNL_EXPR_DYNSET_FLAGS, U32, 0},
};
constexpr AttrRule kFlowOffload[] = {{NFTNL_EXPR_FLOW_TABLE_NAME, Str, kName}};
constexpr AttrRule kByteorder[] = {
    {NFTNL_EXPR_BYTEORDER_DREG, U32, 0}, {NFTNL_EXPR_BYTEORDER_SREG, U32, 0}, {NFTNL_EXPR_BYTEORDER_OP, U32, 0},
    {NFTNL_EXPR_BYTEORDER_LEN, U32, 0},  {NFTNL_EXPR_BYTEORDER_SIZE, U32, 0},
};

template <size_t N>
constexpr AttrRules Rules(const AttrRule (&rules)[N], const char* what) {
  return AttrRules{rules, N, what};
}

const AttrRules kTableRules = Rules(kTable, "a table");
const AttrRules kChainRules = Rules(kChain, "a chain");
const AttrRules kRuleRules = Rules(kRule, "a rule");
const AttrRules kSetRules = Rules(kSet, "a set");
const AttrRules kFlowtableRules = Rules(kFlowtable, "a flowtable");
const AttrRules kElementRules = Rules(kElement, "an element");

struct NamedRules {
  const char* name;
  AttrRules rules;
};

// Every expression the encoder emits (src/nft/netlink/kernel-exprs.ts); notrack
// takes no attribute at all (libnftnl has no setter for it and would call a null one).
const NamedRules kExpressions[] = {
    {"payload", Rules(kPayload, "expression payload")},
    {"cmp", Rules(kCmp, "expression cmp")},
    {"bitwise", Rules(kBitwise, "expression bitwise")},
    {"meta", Rules(kMeta, "expression meta")},
    {"ct", Rules(kCt, "expression ct")},
    {"lookup", Rules(kLookup, "expression lookup")},
    {"immediate", Rules(kImmediate, "expression immediate")},
    {"nat", Rules(kNat, "expression nat")},
    {"masq", Rules(kMasq, "expression masq")},
    {"numgen", Rules(kNumgen, "expression numgen")},
    {"counter", Rules(kCounter, "expression counter")},
    {"reject", Rules(kReject, "expression reject")},
    {"fib", Rules(kFib, "expression fib")},
    {"dynset", Rules(kDynset, "expression dynset")},
    {"flow_offload", Rules(kFlowOffload, "expression flow_offload")},
    {"byteorder", Rules(kByteorder, "expression byteorder")},
    {"notrack", AttrRules{nullptr, 0, "expression notrack"}},
};

}  // namespace

const AttrRules& ObjectAttrRules(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::Table:
      return kTableRules;
    case ObjectKind::Chain:
      return kChainRules;
    case ObjectKind::Rule:
      return kRuleRules;
    case ObjectKind::Set:
    case ObjectKind::Elements:
      return kSetRules;
    case ObjectKind::Flowtable:
      return kFlowtableRules;
  }
  return kTableRules;  // unreachable: the kind was checked
}

const AttrRules& ElementAttrRules() { return kElementRules; }

const AttrRules* ExpressionAttrRules(const uint8_t* name, size_t len) {
  for (const NamedRules& e : kExpressions)
    if (strlen(e.name) == len && memcmp(e.name, name, len) == 0) return &e.rules;
  return nullptr;
}

}  // namespace knp
