#include "batch.h"

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/flowtable.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include <cstring>
#include <string_view>

namespace knp {

namespace {

constexpr uint32_t kMagic = 0x42504e4b;
constexpr uint32_t kVersion = 1;

// NFT_MSG_DESTROY* arrived in Linux 6.3; older uapi headers lack them.
constexpr uint8_t kMsgDestroyTable = 26;
constexpr uint8_t kMsgDestroyFlowtable = 32;

class Reader {
 public:
  Reader(const uint8_t* b, size_t size, InputError* e) : b_(b), size_(size), e_(e) {}
  bool Need(size_t n) {
    if (size_ - pos_ < n) {
      if (e_->code.empty()) {
        e_->code = "ERR_NFT_BATCH_TRUNCATED";
        e_->message = "batch buffer is truncated at byte " + std::to_string(pos_);
      }
      return false;
    }
    return true;
  }
  bool U8(uint8_t* v) {
    if (!Need(1)) return false;
    *v = b_[pos_++];
    return true;
  }
  bool U16(uint16_t* v) {
    if (!Need(2)) return false;
    *v = uint16_t(b_[pos_] | (b_[pos_ + 1] << 8));
    pos_ += 2;
    return true;
  }
  bool U32(uint32_t* v) {
    if (!Need(4)) return false;
    *v = uint32_t(b_[pos_]) | (uint32_t(b_[pos_ + 1]) << 8) | (uint32_t(b_[pos_ + 2]) << 16) |
         (uint32_t(b_[pos_ + 3]) << 24);
    pos_ += 4;
    return true;
  }
  bool Skip(size_t n) {
    if (!Need(n)) return false;
    pos_ += n;
    return true;
  }
  size_t pos() const { return pos_; }
  bool AtEnd() const { return pos_ == size_; }

 private:
  const uint8_t* b_;
  size_t size_;
  InputError* e_;
  size_t pos_ = 0;
};

bool Fail(InputError* e, const char* code, std::string message, bool typeError = false) {
  e->code = code;
  e->message = std::move(message);
  e->isTypeError = typeError;
  return false;
}

bool CheckName(const uint8_t* p, uint32_t len, InputError* e) {
  if (len > kMaxNameLength)
    return Fail(e, "ERR_NFT_NAME_TOO_LONG",
                "name of " + std::to_string(len) + " bytes exceeds the kernel limit of 255");
  if (memchr(p, 0, len) != nullptr) return Fail(e, "ERR_NFT_NAME_INVALID", "name contains a NUL byte");
  return true;
}

// Where an attribute list sits, which limits its byte values have.
enum class AttrScope { Object, Expression, Element };

// libnftnl copies key, data, mask and register values into fixed 64-byte
// fields (NFT_DATA_VALUE_MAXLEN) and user data up to 256 bytes
// (NFT_USERDATA_MAXLEN): longer values must never reach it.
constexpr uint32_t kMaxValueBytes = 64;
constexpr uint32_t kMaxUserdataBytes = 256;
constexpr uint16_t kElemUserdata = 7;   // NFTNL_SET_ELEM_USERDATA
constexpr uint16_t kSetDescConcat = 16;  // NFTNL_SET_DESC_CONCAT: at most 16 field lengths

uint32_t MaxBytes(AttrScope scope, ObjectKind kind, uint16_t id) {
  switch (scope) {
    case AttrScope::Expression:
      return kMaxValueBytes;
    case AttrScope::Element:
      return id == kElemUserdata ? kMaxUserdataBytes : kMaxValueBytes;
    case AttrScope::Object:
      return kind == ObjectKind::Set && id == kSetDescConcat ? 16 : kMaxUserdataBytes;
  }
  return 0;
}

// Whether libnftnl takes attribute `id` of this object as plain data: in
// range (libnftnl exits the process on an id past its maximum), not one that
// holds a pointer to a nested libnftnl object, and a string array exactly
// where libnftnl expects one.
bool AttrIdFits(AttrScope scope, ObjectKind kind, bool dynset, uint16_t id, AttrType type) {
  const bool array = (scope == AttrScope::Object && kind == ObjectKind::Chain && id == NFTNL_CHAIN_DEVICES) ||
                     (scope == AttrScope::Object && kind == ObjectKind::Flowtable && id == NFTNL_FLOWTABLE_DEVICES);
  if (array != (type == AttrType::StrArray)) return false;
  switch (scope) {
    case AttrScope::Expression:
      return !(dynset && (id == NFTNL_EXPR_DYNSET_EXPR || id == NFTNL_EXPR_DYNSET_EXPRESSIONS));
    case AttrScope::Element:
      return id <= NFTNL_SET_ELEM_MAX && id != NFTNL_SET_ELEM_EXPR && id != NFTNL_SET_ELEM_EXPRESSIONS;
    case AttrScope::Object:
      switch (kind) {
        case ObjectKind::Table:
          return id <= NFTNL_TABLE_MAX;
        case ObjectKind::Chain:
          return id <= NFTNL_CHAIN_MAX;
        case ObjectKind::Rule:
          return id <= NFTNL_RULE_MAX;
        case ObjectKind::Set:
        case ObjectKind::Elements:
          return id <= NFTNL_SET_MAX && id != NFTNL_SET_EXPR && id != NFTNL_SET_EXPRESSIONS;
        case ObjectKind::Flowtable:
          return id <= NFTNL_FLOWTABLE_MAX;
      }
  }
  return false;
}

// Checks one attribute list; adds its netlink bound to *bound.
bool ReadAttrs(Reader& r, const uint8_t* base, AttrScope scope, ObjectKind kind, size_t* bound, InputError* e,
               bool dynset = false) {
  uint16_t count;
  if (!r.U16(&count)) return false;
  for (uint16_t i = 0; i < count; i++) {
    // One bounds check for the 7-byte header, one for the value.
    if (!r.Need(7)) return false;
    const uint8_t* h = base + r.pos();
    const uint16_t id = LeU16(h);
    const uint8_t type = h[2];
    const uint32_t len = LeU32(h + 3);
    r.Skip(7);
    const uint8_t* p = h + 7;
    if (!r.Skip(len)) return false;
    if (!AttrIdFits(scope, kind, dynset, id, AttrType(type)))
      return Fail(e, "ERR_NFT_BATCH_INVALID",
                  "attribute " + std::to_string(id) + " of type " + std::to_string(type) + " does not fit here");
    switch (AttrType(type)) {
      case AttrType::U8:
        if (len != 1) return Fail(e, "ERR_NFT_BATCH_INVALID", "u8 attribute of wrong length");
        break;
      case AttrType::U16:
        if (len != 2) return Fail(e, "ERR_NFT_BATCH_INVALID", "u16 attribute of wrong length");
        break;
      case AttrType::U32:
        if (len != 4) return Fail(e, "ERR_NFT_BATCH_INVALID", "u32 attribute of wrong length");
        break;
      case AttrType::U64:
        if (len != 8) return Fail(e, "ERR_NFT_BATCH_INVALID", "u64 attribute of wrong length");
        break;
      case AttrType::Str:
        if (!CheckName(p, len, e)) return false;
        break;
      case AttrType::Bytes:
        if (len > MaxBytes(scope, kind, id))
          return Fail(e, "ERR_NFT_BATCH_INVALID",
                      "byte attribute " + std::to_string(id) + " of " + std::to_string(len) + " bytes is too large");
        break;
      case AttrType::StrArray: {
        // u16 count, then each u16 len + bytes: checked here, read again when building.
        uint32_t pos = 0;
        if (len < 2) return Fail(e, "ERR_NFT_BATCH_INVALID", "string array too short");
        uint16_t n = LeU16(p);
        pos = 2;
        for (uint16_t k = 0; k < n; k++) {
          if (len - pos < 2) return Fail(e, "ERR_NFT_BATCH_INVALID", "string array truncated");
          uint16_t l = LeU16(p + pos);
          pos += 2;
          if (len - pos < l) return Fail(e, "ERR_NFT_BATCH_INVALID", "string array truncated");
          if (!CheckName(p + pos, l, e)) return false;
          pos += l;
        }
        if (pos != len) return Fail(e, "ERR_NFT_BATCH_INVALID", "string array has trailing bytes");
        break;
      }
      default:
        return Fail(e, "ERR_NFT_BATCH_INVALID", "unknown attribute type " + std::to_string(type));
    }
    *bound += NetlinkAttrBound(AttrType(type), len);
  }
  return true;
}

bool MsgTypeFits(ObjectKind kind, uint8_t t) {
  switch (kind) {
    case ObjectKind::Table:
      return t == NFT_MSG_NEWTABLE || t == NFT_MSG_DELTABLE || t == kMsgDestroyTable;
    case ObjectKind::Chain:
      return t == NFT_MSG_NEWCHAIN || t == NFT_MSG_DELCHAIN || t == kMsgDestroyTable + 1;
    case ObjectKind::Rule:
      return t == NFT_MSG_NEWRULE || t == NFT_MSG_DELRULE || t == kMsgDestroyTable + 2;
    case ObjectKind::Set:
      return t == NFT_MSG_NEWSET || t == NFT_MSG_DELSET || t == kMsgDestroyTable + 3;
    case ObjectKind::Elements:
      return t == NFT_MSG_NEWSETELEM || t == NFT_MSG_DELSETELEM || t == kMsgDestroyTable + 4;
    case ObjectKind::Flowtable:
      return t == NFT_MSG_NEWFLOWTABLE || t == NFT_MSG_DELFLOWTABLE || t == kMsgDestroyFlowtable;
  }
  return false;
}

// Expression names libnftnl knows, probed once per name and batch: a batch
// repeats a handful of names thousands of times.
class ExpressionNames {
 public:
  bool Known(const uint8_t* p, uint8_t len) {
    std::string_view name(reinterpret_cast<const char*>(p), len);
    for (const std::string& k : known_)
      if (k == name) return true;
    if (name.empty() || name.find('\0') != std::string_view::npos) return false;
    std::string copy(name);
    nftnl_expr* probe = nftnl_expr_alloc(copy.c_str());
    if (probe == nullptr) return false;
    nftnl_expr_free(probe);
    known_.push_back(std::move(copy));
    return true;
  }

 private:
  std::vector<std::string> known_;
};

}  // namespace

bool IsKnownFamily(uint32_t family) {
  return family == NFPROTO_INET || family == NFPROTO_IPV4 || family == NFPROTO_IPV6 ||
         family == NFPROTO_ARP || family == NFPROTO_BRIDGE || family == NFPROTO_NETDEV;
}

// Netlink bytes around each message (headers, nests) and each expression
// (list element, name, data nest) beyond their attributes.
constexpr size_t kMessageOverhead = 256;
constexpr size_t kExpressionOverhead = 64;
constexpr size_t kElementOverhead = 16;

bool ParseBatch(const uint8_t* data, size_t size, Batch* out, InputError* e) {
  out->data = data;
  out->size = size;
  const uint8_t* base = data;
  Reader r(data, size, e);
  uint32_t magic, version, count;
  if (!r.U32(&magic) || !r.U32(&version) || !r.U32(&count)) return false;
  if (magic != kMagic) return Fail(e, "ERR_NFT_BATCH_INVALID", "not a kube-nft-proxy batch buffer");
  if (version != kVersion)
    return Fail(e, "ERR_NFT_BATCH_INVALID", "unsupported batch version " + std::to_string(version));
  if (size > UINT32_MAX) return Fail(e, "ERR_NFT_BATCH_INVALID", "batch buffer of 4 GiB or more");
  // Each record takes at least 11 bytes: a count beyond that is a lie, not a reservation.
  if (count > size / 11) return Fail(e, "ERR_NFT_BATCH_TRUNCATED", "batch buffer is truncated");
  out->records.reserve(count);
  ExpressionNames names;
  size_t bound = 2 * kMessageOverhead;  // batch begin and end
  for (uint32_t i = 0; i < count; i++) {
    Record rec{};
    uint8_t kind;
    if (!r.U8(&kind) || !r.U8(&rec.msgType) || !r.U16(&rec.flags) || !r.U8(&rec.family) || !r.U32(&rec.opIndex))
      return false;
    if (kind < 1 || kind > 6) return Fail(e, "ERR_NFT_BATCH_INVALID", "unknown object kind " + std::to_string(kind));
    rec.kind = ObjectKind(kind);
    if (!MsgTypeFits(rec.kind, rec.msgType))
      return Fail(e, "ERR_NFT_BATCH_INVALID",
                  "message type " + std::to_string(rec.msgType) + " does not fit object kind " + std::to_string(kind));
    if (!IsKnownFamily(rec.family))
      return Fail(e, "ERR_NFT_FAMILY", "unknown address family " + std::to_string(rec.family));
    rec.attrs = uint32_t(r.pos());
    size_t recordBound = kMessageOverhead;
    if (!ReadAttrs(r, base, AttrScope::Object, rec.kind, &recordBound, e)) return false;
    bound += recordBound;
    if (rec.kind == ObjectKind::Rule) {
      uint16_t n;
      if (!r.U16(&n)) return false;
      rec.body = uint32_t(r.pos());
      rec.count = n;
      for (uint16_t k = 0; k < n; k++) {
        uint8_t nameLen;
        if (!r.U8(&nameLen)) return false;
        const uint8_t* name = base + r.pos();
        if (!r.Skip(nameLen)) return false;
        if (!names.Known(name, nameLen))
          return Fail(e, "ERR_NFT_BATCH_INVALID",
                      "unknown expression '" + std::string(reinterpret_cast<const char*>(name), nameLen) + "'");
        bound += kExpressionOverhead + nameLen;
        const bool dynset = nameLen == 6 && memcmp(name, "dynset", 6) == 0;
        if (!ReadAttrs(r, base, AttrScope::Expression, rec.kind, &bound, e, dynset)) return false;
      }
    } else if (rec.kind == ObjectKind::Elements) {
      uint32_t n;
      if (!r.U32(&n)) return false;
      rec.body = uint32_t(r.pos());
      rec.count = n;
      for (uint32_t k = 0; k < n; k++) {
        uint32_t opIndex;
        if (!r.U32(&opIndex)) return false;
        bound += kElementOverhead;
        if (!ReadAttrs(r, base, AttrScope::Element, rec.kind, &bound, e)) return false;
      }
      // The elements may take several messages, each repeating the set's attributes.
      bound += size_t(n / 64 + 1) * recordBound;
    }
    out->records.push_back(rec);
  }
  if (!r.AtEnd()) return Fail(e, "ERR_NFT_BATCH_INVALID", "trailing bytes after the last record");
  out->netlinkSize = bound;
  return true;
}

}  // namespace knp
