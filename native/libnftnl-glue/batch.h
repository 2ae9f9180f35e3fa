// The compact batch encoding built by src/nft/encode.ts, parsed into records.
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
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace knp {

enum class ObjectKind : uint8_t { Table = 1, Chain = 2, Rule = 3, Set = 4, Elements = 5, Flowtable = 6 };

enum class AttrType : uint8_t { U8 = 1, U16 = 2, U32 = 3, U64 = 4, Str = 5, Bytes = 6, StrArray = 7 };

struct Attr {
  uint16_t id;
  AttrType type;
  uint32_t offset;  // into Batch::bytes
  uint32_t len;
};

struct AttrRange {
  uint32_t first = 0;
  uint32_t count = 0;
};

struct Expr {
  std::string name;
  AttrRange attrs;
};

struct Elem {
  uint32_t opIndex;
  AttrRange attrs;
};

struct Record {
  ObjectKind kind;
  uint8_t msgType;
  uint16_t flags;
  uint8_t family;
  uint32_t opIndex;
  AttrRange attrs;
  std::vector<Expr> exprs;
  uint32_t firstElem = 0;
  uint32_t elemCount = 0;
};

struct Batch {
  std::vector<uint8_t> bytes;
  std::vector<Attr> attrs;
  std::vector<Elem> elems;
  std::vector<Record> records;
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

// Parses and checks a batch buffer (a private copy: the caller moves it in).
// Runs on the JS thread so that bad input becomes a thrown error, not a crash.
bool ParseBatch(std::vector<uint8_t> bytes, Batch* out, InputError* error);

}  // namespace knp
