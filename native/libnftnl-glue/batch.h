// The compact batch encoding built by src/nft/netlink/encode.ts: copied into
// memory the addon owns, checked once (ParseBatch) against the allow-list in
// attr-rules.h before anything is built, read again without checks when the
// messages are.
//
// Layout (all integers little-endian):
//   header  u32 magic 'KNPB' (0x42504e4b), u32 version (1), u32 record count
//   record  u8 kind, u8 nft_msg_type, u16 nlmsg_flags, u8 family, u32 op_index,
//           attrs, then for kind Rule: u16 expr count, each { u8 name_len, name, attrs },
//           for kind Elements: u32 elem count, each { u32 op_index, attrs }
//   attrs   u16 count, each { u16 libnftnl attribute id, u8 type, u32 len, bytes }
// The attribute ids are libnftnl's (NFTNL_TABLE_NAME...), chosen on the JS side:
// this layer only checks them against what libnftnl takes and hands values to
// libnftnl, it decides nothing.
// Flushing a table or chain is a Rule record with NFT_MSG_DELRULE and no
// expressions; flushing a set is an Elements record with NFT_MSG_DELSETELEM and
// no elements.
//
// Parsing keeps one small Record per record and nothing per attribute,
// expression or element: a 100k-element batch costs one copy and one pass.
#pragma once

#include <cstdint>
#include <memory>
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
  // Netlink bytes the record's message takes at most (for Elements: the
  // set's part of each of its messages).
  size_t bound;
};

// A batch's bytes where JS can no longer write them: a copy, or a buffer the
// addon allocated that commit() detached from JS (see addon.cc).
using BatchBytes = std::shared_ptr<const uint8_t>;

struct Batch {
  // The batch's bytes, held where JS cannot change what was checked.
  BatchBytes owned;
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::vector<Record> records;
  // The netlink bytes the batch is expected to take at most: the send buffer's
  // first size (the builder still checks every message against what is left).
  size_t netlinkSize = 0;
  // Whether the bytes lie in pages nothing else uses (a buffer from
  // allocateBatch that commit() took): the builder then gives the pages it
  // has read back to the OS (see BuildMessages).
  bool pagesOwned = false;
};

// What went wrong with an input buffer: a stable code and a readable message.
struct InputError {
  std::string code;
  std::string message;
  bool isTypeError = false;
  // The operation whose bytes are wrong; -1 when the batch's header is.
  int64_t index = -1;
};

// Names the kernel accepts are shorter than NFT_NAME_MAXLEN (256) bytes.
constexpr uint32_t kMaxNameLength = 255;

bool IsKnownFamily(uint32_t family);

// A copy of `size` bytes at `data` for ParseBatch (on the JS thread, where
// the bytes cannot change meanwhile). Never zero-filled first.
BatchBytes CopyBatch(const uint8_t* data, size_t size);

// Takes the bytes and checks them. Bad input is an InputError with a stable code
// and the operation's index, never a crash; runs on a worker thread (no napi_env).
bool ParseBatch(BatchBytes bytes, size_t size, Batch* out, InputError* error);

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

}  // namespace knp
