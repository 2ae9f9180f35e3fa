// The compact batch encoding built by src/nft/netlink/encode.ts: checked (ParseBatch)
// before anything is built, read again without checks when the messages are.
//
// Layout (all integers little-endian):
//   header  u32 magic 'KNPB' (0x42504e4b), u32 version (1), u32 record count
//   record  u8 kind, u8 nft_msg_type, u16 nlmsg_flags, u8 family, u32 op_index,
//           attrs, then for kind Rule: u16 expr count, each { u8 name_len, name, attrs },
//           for kind Elements: u32 elem count, each { u32 op_index, attrs }
//   attrs   u16 count, each { u16 libnftnl attribute id, u8 type, u32 len, bytes }
// The attribute ids are libnftnl's (NFTNL_TABLE_NAME...), chosen on the JS side:
// this layer only checks shapes and hands values to libnftnl, it decides nothing.
// Flushing a table or chain is a Rule record with NFT_MSG_DELRULE and no
// expressions; flushing a set is an Elements record with NFT_MSG_DELSETELEM and
// no elements.
//
// Parsing keeps one small Record per record and nothing per attribute,
// expression or element: a 100k-element batch costs one pass over the bytes
// where JS wrote them (see Batch::data).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace knp {

enum class ObjectKind : uint8_t { Table = 1, Chain = 2, Rule = 3, Set = 4, Elements = 5, Flowtable = 6 };

enum class AttrType : uint8_t { U8 = 1, U16 = 2, U32 = 3, U64 = 4, Str = 5, Bytes = 6, StrArray = 7 };

struct Record {
  ObjectKind kind;
  uint8_t msgType;
  uint16_t flags;
  uint8_t family;
  uint32_t opIndex;
  uint32_t attrs;  // offset of the record's attribute list in Batch::data
  uint32_t body;   // offset of its first expression or element
  uint32_t count;  // expressions (Rule) or elements (Elements)
};

struct Batch {
  // The batch buffer. Not a copy: the caller keeps it alive and unchanged
  // until it is done with the Batch (the addon pins the JS Uint8Array for the
  // commit; a full sync's batch is tens of MiB that a copy would double).
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::vector<Record> records;
  // The netlink bytes the batch is expected to take at most: the send buffer's
  // first size (the builder still checks every message against what is left).
  size_t netlinkSize = 0;
};

// What went wrong with an input buffer: a stable code and a readable message.
struct InputError {
  std::string code;
  std::string message;
  bool isTypeError = false;
};

// Names the kernel accepts are shorter than NFT_NAME_MAXLEN (256) bytes.
constexpr uint32_t kMaxNameLength = 255;

bool IsKnownFamily(uint32_t family);

// Parses and checks a batch buffer, which must outlive *out unchanged (see
// Batch::data). Bad input is an InputError with a stable code, never a crash;
// runs on the worker thread (no napi_env): the JS thread pays for nothing.
bool ParseBatch(const uint8_t* data, size_t size, Batch* out, InputError* error);

// Little-endian reads from a checked batch.
inline uint16_t LeU16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t LeU32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

// One attribute of a checked batch.
struct AttrView {
  uint16_t id;
  AttrType type;
  uint32_t len;
  const uint8_t* value;
};

// Reads the attribute at bytes[*pos] and moves *pos past it.
inline AttrView NextAttr(const uint8_t* bytes, size_t* pos) {
  const uint8_t* p = bytes + *pos;
  AttrView a{LeU16(p), AttrType(p[2]), LeU32(p + 3), p + 7};
  *pos += 7 + a.len;
  return a;
}

// Moves *pos past an attribute list.
inline void SkipAttrs(const uint8_t* bytes, size_t* pos) {
  uint16_t n = LeU16(bytes + *pos);
  *pos += 2;
  for (uint16_t i = 0; i < n; i++) *pos += 7 + LeU32(bytes + *pos + 3);
}

// Upper bound of the netlink bytes one attribute becomes (header, nesting,
// NUL, padding); string arrays become one attribute per string.
inline size_t NetlinkAttrBound(AttrType type, uint32_t len) {
  return type == AttrType::StrArray ? 32 + size_t(len) * 4 : 16 + ((size_t(len) + 4) & ~size_t(3));
}

}  // namespace knp
