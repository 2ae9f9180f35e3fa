#include "batch.h"

#include "attr-rules.h"

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <algorithm>
#include <cstring>

namespace knp {

namespace {

constexpr uint32_t kMagic = 0x42504e4b;
constexpr uint32_t kVersion = 1;

// The flags a batch's message may carry: NLM_F_REPLACE, _EXCL, _CREATE and
// _APPEND (the same bits as NLM_F_NONREC and friends on deletions). Others
// would change the transaction's answers (NLM_F_ACK, NLM_F_ECHO: one more
// per message, which the receive buffer is not sized for).
constexpr uint16_t kMessageFlags = 0x0f00;

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

bool CheckName(const uint8_t* p, uint32_t len, uint32_t max, InputError* e) {
  if (len > max)
    return Fail(e, "ERR_NFT_NAME_TOO_LONG",
                "name of " + std::to_string(len) + " bytes exceeds the limit of " + std::to_string(max));
  if (memchr(p, 0, len) != nullptr) return Fail(e, "ERR_NFT_NAME_INVALID", "name contains a NUL byte");
  return true;
}

const char* TypeName(AttrType t) {
  switch (t) {
    case AttrType::U8:
      return "u8";
    case AttrType::U16:
      return "u16";
    case AttrType::U32:
      return "u32";
    case AttrType::U64:
      return "u64";
    case AttrType::Str:
      return "string";
    case AttrType::Bytes:
      return "bytes";
    case AttrType::StrArray:
      return "string array";
  }
  return "unknown type";
}

uint32_t IntegerLength(AttrType t) {
  switch (t) {
    case AttrType::U8:
      return 1;
    case AttrType::U16:
      return 2;
    case AttrType::U32:
      return 4;
    case AttrType::U64:
      return 8;
    case AttrType::Str:
    case AttrType::Bytes:
    case AttrType::StrArray:
      return 0;
  }
  return 0;
}

// A string array's value: u16 count, then each u16 len + bytes.
bool CheckStrArray(const uint8_t* p, uint32_t len, InputError* e) {
  if (len < 2) return Fail(e, "ERR_NFT_BATCH_INVALID", "string array too short");
  uint16_t n = LeU16(p);
  uint32_t pos = 2;
  for (uint16_t k = 0; k < n; k++) {
    if (len - pos < 2) return Fail(e, "ERR_NFT_BATCH_INVALID", "string array truncated");
    uint16_t l = LeU16(p + pos);
    pos += 2;
    if (len - pos < l) return Fail(e, "ERR_NFT_BATCH_INVALID", "string array truncated");
    if (!CheckName(p + pos, l, kMaxNameLength, e)) return false;
    pos += l;
  }
  if (pos != len) return Fail(e, "ERR_NFT_BATCH_INVALID", "string array has trailing bytes");
  return true;
}

std::string Where(const AttrRule& rule, const AttrRules& rules) {
  return "attribute " + std::to_string(rule.id) + " of " + rules.what;
}

// Checks one attribute's type and length against its rule (messages are
// built only on failure: a batch has hundreds of thousands of attributes).
bool CheckAttr(const AttrRule& rule, const AttrRules& rules, AttrType type, const uint8_t* p, uint32_t len,
               InputError* e) {
  if (type != rule.type)
    return Fail(e, "ERR_NFT_BATCH_INVALID",
                Where(rule, rules) + " is " + TypeName(type) + " where libnftnl takes " + TypeName(rule.type));
  const uint32_t exact = IntegerLength(type);
  if (exact != 0) {
    if (len == exact) return true;
    return Fail(e, "ERR_NFT_BATCH_INVALID",
                Where(rule, rules) + " has " + std::to_string(len) + " bytes where libnftnl takes " +
                    std::to_string(exact));
  }
  if (type == AttrType::Str) return CheckName(p, len, rule.maxLen, e);
  if (len > rule.maxLen)
    return Fail(e, "ERR_NFT_BATCH_INVALID",
                Where(rule, rules) + " of " + std::to_string(len) + " bytes is too large (at most " +
                    std::to_string(rule.maxLen) + ")");
  return type == AttrType::StrArray ? CheckStrArray(p, len, e) : true;
}

// Checks one attribute list against its allow-list; adds its netlink bound to *bound.
bool ReadAttrs(Reader& r, const uint8_t* base, const AttrRules& rules, size_t* bound, InputError* e) {
  uint16_t count;
  if (!r.U16(&count)) return false;
  uint64_t seen = 0;
  uint64_t excluded = 0;
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
    const AttrRule* rule = rules.Find(id);
    if (rule == nullptr)
      return Fail(e, "ERR_NFT_BATCH_INVALID", "attribute " + std::to_string(id) + " is not one libnftnl takes for " +
                                                  rules.what);
    // libnftnl leaks or overwrites an attribute given twice, and some share storage.
    if (seen & (uint64_t(1) << id))
      return Fail(e, "ERR_NFT_BATCH_INVALID", "attribute " + std::to_string(id) + " of " + rules.what + " is repeated");
    if (excluded & (uint64_t(1) << id) || rule->excludes & seen)
      return Fail(e, "ERR_NFT_BATCH_INVALID", "attribute " + std::to_string(id) + " of " + rules.what +
                                                  " cannot appear together with another one it shares storage with");
    if (!CheckAttr(*rule, rules, AttrType(type), p, len, e)) return false;
    seen |= uint64_t(1) << id;
    excluded |= rule->excludes;
    *bound += NetlinkAttrBound(*rule, len);
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

namespace {

// A rule's expressions: known names, each with its allowed attributes.
bool ReadExpressions(Reader& r, const uint8_t* base, Record* rec, size_t* bound, InputError* e) {
  uint16_t n;
  if (!r.U16(&n)) return false;
  rec->body = uint32_t(r.pos());
  rec->count = n;
  for (uint16_t k = 0; k < n; k++) {
    uint8_t nameLen;
    if (!r.U8(&nameLen)) return false;
    const uint8_t* name = base + r.pos();
    if (!r.Skip(nameLen)) return false;
    const AttrRules* rules = ExpressionAttrRules(name, nameLen);
    if (rules == nullptr)
      return Fail(e, "ERR_NFT_BATCH_INVALID",
                  "unknown expression '" + std::string(reinterpret_cast<const char*>(name), nameLen) + "'");
    *bound += kExpressionOverhead + nameLen;
    if (!ReadAttrs(r, base, *rules, bound, e)) return false;
  }
  return true;
}

// An element list; failures name the element's own operation.
bool ReadElements(Reader& r, const uint8_t* base, Record* rec, size_t* bound, InputError* e) {
  uint32_t n;
  if (!r.U32(&n)) return false;
  rec->body = uint32_t(r.pos());
  rec->count = n;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t opIndex;
    if (!r.U32(&opIndex)) return false;
    *bound += kElementOverhead;
    if (!ReadAttrs(r, base, ElementAttrRules(), bound, e)) {
      e->index = opIndex;
      return false;
    }
  }
  // The elements may take several messages, each repeating the set's attributes.
  *bound += size_t(n / 64 + 1) * rec->bound;
  return true;
}

// One record: its header, attributes and body. *bound grows by its netlink bytes.
bool ReadRecord(Reader& r, const uint8_t* base, Record* rec, size_t* bound, InputError* e) {
  uint8_t kind;
  if (!r.U8(&kind) || !r.U8(&rec->msgType) || !r.U16(&rec->flags) || !r.U8(&rec->family) || !r.U32(&rec->opIndex))
    return false;
  e->index = rec->opIndex;
  if (kind < 1 || kind > 6) return Fail(e, "ERR_NFT_BATCH_INVALID", "unknown object kind " + std::to_string(kind));
  rec->kind = ObjectKind(kind);
  if (!MsgTypeFits(rec->kind, rec->msgType))
    return Fail(e, "ERR_NFT_BATCH_INVALID",
                "message type " + std::to_string(rec->msgType) + " does not fit object kind " + std::to_string(kind));
  if (!IsKnownFamily(rec->family))
    return Fail(e, "ERR_NFT_FAMILY", "unknown address family " + std::to_string(rec->family));
  if (rec->flags & ~kMessageFlags)
    return Fail(e, "ERR_NFT_BATCH_INVALID", "message flags " + std::to_string(rec->flags) + " outside " +
                                                std::to_string(kMessageFlags));
  rec->attrs = uint32_t(r.pos());
  size_t own = kMessageOverhead;
  if (!ReadAttrs(r, base, ObjectAttrRules(rec->kind), &own, e)) return false;
  if (rec->kind == ObjectKind::Rule && !ReadExpressions(r, base, rec, &own, e)) return false;
  rec->bound = own;
  *bound += own;
  if (rec->kind == ObjectKind::Elements && !ReadElements(r, base, rec, bound, e)) return false;
  e->index = -1;
  return true;
}

}  // namespace

BatchBytes CopyBatch(const uint8_t* data, size_t size) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size == 0 ? 1 : size]);
  if (size > 0) memcpy(copy.get(), data, size);
  return BatchBytes(copy.release(), std::default_delete<const uint8_t[]>());
}

bool ParseBatch(BatchBytes bytes, size_t size, Batch* out, InputError* e) {
  out->owned = std::move(bytes);
  out->data = out->owned.get();
  out->size = size;
  const uint8_t* base = out->data;
  Reader r(base, size, e);
  uint32_t magic, version, count;
  if (!r.U32(&magic) || !r.U32(&version) || !r.U32(&count)) return false;
  if (magic != kMagic) return Fail(e, "ERR_NFT_BATCH_INVALID", "not a kube-nft-proxy batch buffer");
  if (version != kVersion)
    return Fail(e, "ERR_NFT_BATCH_INVALID", "unsupported batch version " + std::to_string(version));
  if (size > UINT32_MAX) return Fail(e, "ERR_NFT_BATCH_INVALID", "batch buffer of 4 GiB or more");
  // Each record takes at least 11 bytes: a count beyond that is a lie, not a reservation.
  if (count > size / 11) return Fail(e, "ERR_NFT_BATCH_TRUNCATED", "batch buffer is truncated");
  // An honest count is reserved at once; a forged one costs no more than the bytes do.
  out->records.reserve(std::min<size_t>(count, size / 32));
  size_t bound = 2 * kMessageOverhead;  // batch begin and end
  for (uint32_t i = 0; i < count; i++) {
    Record rec{};
    if (!ReadRecord(r, base, &rec, &bound, e)) {
      if (e->index >= 0) e->message = "operation " + std::to_string(e->index) + ": " + e->message;
      return false;
    }
    out->records.push_back(rec);
  }
  if (!r.AtEnd()) return Fail(e, "ERR_NFT_BATCH_INVALID", "trailing bytes after the last record");
  out->netlinkSize = bound;
  return true;
}

}  // namespace knp
