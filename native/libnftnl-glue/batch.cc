#include "batch.h"

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <libnftnl/expr.h>

#include <cstring>

namespace knp {

namespace {

constexpr uint32_t kMagic = 0x42504e4b;
constexpr uint32_t kVersion = 1;

// NFT_MSG_DESTROY* arrived in Linux 6.3; older uapi headers lack them.
constexpr uint8_t kMsgDestroyTable = 26;
constexpr uint8_t kMsgDestroyFlowtable = 32;

class Reader {
 public:
  Reader(const std::vector<uint8_t>& b, InputError* e) : b_(b), e_(e) {}
  bool Need(size_t n) {
    if (b_.size() - pos_ < n) {
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
  bool AtEnd() const { return pos_ == b_.size(); }

 private:
  const std::vector<uint8_t>& b_;
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

bool ReadAttrs(Reader& r, Batch* b, AttrRange* range, InputError* e) {
  uint16_t count;
  if (!r.U16(&count)) return false;
  range->first = uint32_t(b->attrs.size());
  range->count = count;
  for (uint16_t i = 0; i < count; i++) {
    Attr a;
    uint8_t type;
    if (!r.U16(&a.id) || !r.U8(&type) || !r.U32(&a.len)) return false;
    a.type = AttrType(type);
    a.offset = uint32_t(r.pos());
    if (!r.Skip(a.len)) return false;
    const uint8_t* p = b->bytes.data() + a.offset;
    switch (a.type) {
      case AttrType::U8:
        if (a.len != 1) return Fail(e, "ERR_NFT_BATCH_INVALID", "u8 attribute of wrong length");
        break;
      case AttrType::U16:
        if (a.len != 2) return Fail(e, "ERR_NFT_BATCH_INVALID", "u16 attribute of wrong length");
        break;
      case AttrType::U32:
        if (a.len != 4) return Fail(e, "ERR_NFT_BATCH_INVALID", "u32 attribute of wrong length");
        break;
      case AttrType::U64:
        if (a.len != 8) return Fail(e, "ERR_NFT_BATCH_INVALID", "u64 attribute of wrong length");
        break;
      case AttrType::Str:
        if (!CheckName(p, a.len, e)) return false;
        break;
      case AttrType::Bytes:
        if (a.len > 65000) return Fail(e, "ERR_NFT_BATCH_INVALID", "attribute too large");
        break;
      case AttrType::StrArray: {
        // u16 count, then each u16 len + bytes: checked here, read again when building.
        uint32_t pos = 0;
        if (a.len < 2) return Fail(e, "ERR_NFT_BATCH_INVALID", "string array too short");
        uint16_t n = uint16_t(p[0] | (p[1] << 8));
        pos = 2;
        for (uint16_t k = 0; k < n; k++) {
          if (a.len - pos < 2) return Fail(e, "ERR_NFT_BATCH_INVALID", "string array truncated");
          uint16_t l = uint16_t(p[pos] | (p[pos + 1] << 8));
          pos += 2;
          if (a.len - pos < l) return Fail(e, "ERR_NFT_BATCH_INVALID", "string array truncated");
          if (!CheckName(p + pos, l, e)) return false;
          pos += l;
        }
        if (pos != a.len) return Fail(e, "ERR_NFT_BATCH_INVALID", "string array has trailing bytes");
        break;
      }
      default:
        return Fail(e, "ERR_NFT_BATCH_INVALID", "unknown attribute type " + std::to_string(type));
    }
    b->attrs.push_back(a);
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

bool IsKnownExpression(const std::string& name) {
  if (name.empty() || name.find('\0') != std::string::npos) return false;
  nftnl_expr* probe = nftnl_expr_alloc(name.c_str());
  if (probe == nullptr) return false;
  nftnl_expr_free(probe);
  return true;
}

}  // namespace

bool IsKnownFamily(uint32_t family) {
  return family == NFPROTO_INET || family == NFPROTO_IPV4 || family == NFPROTO_IPV6 ||
         family == NFPROTO_ARP || family == NFPROTO_BRIDGE || family == NFPROTO_NETDEV;
}

bool ParseBatch(std::vector<uint8_t> bytes, Batch* out, InputError* e) {
  out->bytes = std::move(bytes);
  Reader r(out->bytes, e);
  uint32_t magic, version, count;
  if (!r.U32(&magic) || !r.U32(&version) || !r.U32(&count)) return false;
  if (magic != kMagic) return Fail(e, "ERR_NFT_BATCH_INVALID", "not a kube-nft-proxy batch buffer");
  if (version != kVersion)
    return Fail(e, "ERR_NFT_BATCH_INVALID", "unsupported batch version " + std::to_string(version));
  out->records.reserve(count);
  for (uint32_t i = 0; i < count; i++) {
    Record rec;
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
    if (!ReadAttrs(r, out, &rec.attrs, e)) return false;
    if (rec.kind == ObjectKind::Rule) {
      uint16_t n;
      if (!r.U16(&n)) return false;
      rec.exprs.reserve(n);
      for (uint16_t k = 0; k < n; k++) {
        uint8_t nameLen;
        if (!r.U8(&nameLen)) return false;
        size_t at = r.pos();
        if (!r.Skip(nameLen)) return false;
        Expr ex;
        ex.name.assign(reinterpret_cast<const char*>(out->bytes.data() + at), nameLen);
        if (!IsKnownExpression(ex.name))
          return Fail(e, "ERR_NFT_BATCH_INVALID", "unknown expression '" + ex.name + "'");
        if (!ReadAttrs(r, out, &ex.attrs, e)) return false;
        rec.exprs.push_back(std::move(ex));
      }
    } else if (rec.kind == ObjectKind::Elements) {
      uint32_t n;
      if (!r.U32(&n)) return false;
      rec.firstElem = uint32_t(out->elems.size());
      rec.elemCount = n;
      for (uint32_t k = 0; k < n; k++) {
        Elem el;
        if (!r.U32(&el.opIndex) || !ReadAttrs(r, out, &el.attrs, e)) return false;
        out->elems.push_back(el);
      }
    }
    out->records.push_back(std::move(rec));
  }
  if (!r.AtEnd()) return Fail(e, "ERR_NFT_BATCH_INVALID", "trailing bytes after the last record");
  return true;
}

}  // namespace knp
