#include "message-builder.h"

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/flowtable.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "attr-rules.h"

namespace knp {

namespace {

// Integer attributes reach libnftnl through an 8-byte zeroed union, so a
// setter that reads more than the attribute's length stays inside it.
union IntValue {
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
};

// Takes the attributes named in `ids` (bit n: attribute n, as ApplyAttrs
// collects them) off a reused object, visiting only the bits that are set.
template <typename Obj, typename Unset>
void UnsetAttrs(Obj* obj, uint64_t ids, Unset unset) {
  for (; ids != 0; ids &= ids - 1) unset(obj, uint16_t(__builtin_ctzll(ids)));
}

// Hands the attribute list at bytes[*pos] (checked against the allow-list)
// to libnftnl setters (moving *pos past it), integers in host byte order.
// Adds each attribute's id to *ids (for objects that are reused).
template <typename Obj, typename SetData, typename SetArray>
bool ApplyAttrs(const uint8_t* bytes, size_t* pos, Obj* obj, SetData setData, SetArray setArray,
                uint64_t* ids = nullptr) {
  uint16_t count = LeU16(bytes + *pos);
  *pos += 2;
  for (uint16_t i = 0; i < count; i++) {
    const AttrView a = NextAttr(bytes, pos);
    if (ids != nullptr && a.id < 64) *ids |= uint64_t(1) << a.id;
    IntValue v{};
    int rc = 0;
    switch (a.type) {
      case AttrType::U8:
        v.u8 = a.value[0];
        rc = setData(obj, a.id, &v.u8, 1);
        break;
      case AttrType::U16:
        v.u16 = LeU16(a.value);
        rc = setData(obj, a.id, &v.u16, 2);
        break;
      case AttrType::U32:
        v.u32 = LeU32(a.value);
        rc = setData(obj, a.id, &v.u32, 4);
        break;
      case AttrType::U64:
        v.u64 = uint64_t(LeU32(a.value)) | (uint64_t(LeU32(a.value + 4)) << 32);
        rc = setData(obj, a.id, &v.u64, 8);
        break;
      case AttrType::Str: {
        // Checked to be at most kMaxNameLength bytes without a NUL.
        char text[kMaxNameLength + 1];
        memcpy(text, a.value, a.len);
        text[a.len] = '\0';
        rc = setData(obj, a.id, text, a.len + 1);
        break;
      }
      case AttrType::Bytes:
        rc = setData(obj, a.id, a.value, a.len);
        break;
      case AttrType::StrArray: {
        std::vector<std::string> items;
        uint16_t n = LeU16(a.value);
        uint32_t at = 2;
        for (uint16_t k = 0; k < n; k++) {
          uint16_t l = LeU16(a.value + at);
          items.emplace_back(reinterpret_cast<const char*>(a.value + at + 2), l);
          at += 2 + l;
        }
        std::vector<const char*> ptrs;
        for (auto& item : items) ptrs.push_back(item.c_str());
        ptrs.push_back(nullptr);
        rc = setArray(obj, a.id, ptrs.data());
        break;
      }
    }
    if (rc < 0) return false;
  }
  return true;
}

int NoArray(void*, uint16_t, const char**) { return -1; }

// Netlink's attribute lengths are 16 bits: a nest must stay below this, with
// room for the last element that is checked only once written.
constexpr size_t kMaxNestBytes = 60000;

// Read pages of a batch are given back in steps of at least this much: one
// madvise per record would be tens of thousands of system calls.
constexpr size_t kReleaseStep = size_t(1) << 20;

}  // namespace

class BatchBuilder {
 public:
  BatchBuilder(BuiltBatch* out, uint32_t baseSeq, size_t expectedBytes)
      : buffer(out->buffer), messages(out->messages), elementOps(out->elementOps), releasedBytes_(out->releasedBytes),
        seq_(baseSeq) {
    buffer.Reset(expectedBytes + 4096);
    buffer.Ensure(64);
    buffer.Advance(nftnl_batch_begin(buffer.Tail(), seq_++)->nlmsg_len);
  }

  ~BatchBuilder() {
    if (rule_ != nullptr) nftnl_rule_free(rule_);
    if (elem_ != nullptr) nftnl_set_elem_free(elem_);
  }

  void Add(const Batch& b, std::vector<OperationFailure>* failures) {
    b_ = &b;
    bytes_ = b.data;
    released_ = 0;
    failures_ = failures;
    // A streamed transaction's pieces let the vector grow as vectors do.
    if (messages.empty()) messages.reserve(b.records.size() + 16);
    for (uint32_t r = 0; r < b.records.size(); r++) {
      const Record& rec = b.records[r];
      // Nothing before a record is read again: answers are mapped through elementOps.
      if (b.pagesOwned) ReleaseBefore(rec.attrs);
      if (rec.kind == ObjectKind::Elements) AddElements(rec);
      else if (rec.kind == ObjectKind::Rule) AddRule(rec);
      else AddObject(rec);
    }
    // A piece of a streamed transaction is read to its end: all of it goes,
    // not only whole steps (its mapping lasts until JS collects its buffer).
    if (b.pagesOwned) ReleaseBefore(b.size, true);
    b_ = nullptr;
  }

  void Finish() {
    buffer.Ensure(64);
    buffer.Advance(nftnl_batch_end(buffer.Tail(), seq_++)->nlmsg_len);
  }

  SendBuffer& buffer;
  std::vector<MessageInfo>& messages;
  std::vector<uint32_t>& elementOps;

 private:
  nlmsghdr* Begin(const Record& rec, size_t bound, uint32_t elemCount = 0) {
    buffer.Ensure(bound);
    messages.push_back({rec.opIndex, rec.kind == ObjectKind::Elements, uint32_t(elementOps.size()), elemCount, buffer.size()});
    return nftnl_nlmsg_build_hdr(buffer.Tail(), rec.msgType, rec.family, rec.flags, seq_++);
  }
  void End(const nlmsghdr* nlh) { buffer.Advance(nlh->nlmsg_len); }
  // Drops the message Begin() started: the next one is written over it.
  void Abandon() {
    elementOps.resize(messages.back().firstElement);
    messages.pop_back();
  }

  // Gives the whole pages of the batch before `offset` back to the OS; they
  // read as zeros from then on. In steps of kReleaseStep unless `anySize`.
  void ReleaseBefore(size_t offset, bool anySize = false) {
    static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t start = reinterpret_cast<uintptr_t>(bytes_);
    const uintptr_t from = (start + released_ + page - 1) & ~(page - 1);
    const uintptr_t to = (start + offset) & ~(page - 1);
    if (to <= from || (!anySize && to < from + kReleaseStep)) return;
    if (madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED) != 0) return;
    released_ = to - start;
    releasedBytes_ += to - from;
  }

  // A failure of operation `index`; the batch will not be sent.
  bool Fail(int64_t index, int error, const std::string& what) {
    failures_->push_back({index, error, "operation " + std::to_string(index) + ": " + what, FailureOrigin::Builder});
    return false;
  }

  bool AddObject(const Record& rec) {
    size_t pos = rec.attrs;
    const size_t bound = rec.bound;
    bool ok = false;
    switch (rec.kind) {
      case ObjectKind::Table: {
        nftnl_table* t = nftnl_table_alloc();
        ok = ApplyAttrs(bytes_, &pos, t, nftnl_table_set_data, NoArray);
        if (ok) {
          nlmsghdr* nlh = Begin(rec, bound);
          nftnl_table_nlmsg_build_payload(nlh, t);
          End(nlh);
        }
        nftnl_table_free(t);
        break;
      }
      case ObjectKind::Chain: {
        nftnl_chain* c = nftnl_chain_alloc();
        ok = ApplyAttrs(bytes_, &pos, c, nftnl_chain_set_data, nftnl_chain_set_array);
        if (ok) {
          nlmsghdr* nlh = Begin(rec, bound);
          nftnl_chain_nlmsg_build_payload(nlh, c);
          End(nlh);
        }
        nftnl_chain_free(c);
        break;
      }
      case ObjectKind::Set: {
        nftnl_set* s = nftnl_set_alloc();
        ok = ApplyAttrs(bytes_, &pos, s, nftnl_set_set_data, NoArray);
        if (ok) {
          nlmsghdr* nlh = Begin(rec, bound);
          nftnl_set_nlmsg_build_payload(nlh, s);
          End(nlh);
        }
        nftnl_set_free(s);
        break;
      }
      case ObjectKind::Flowtable: {
        nftnl_flowtable* f = nftnl_flowtable_alloc();
        ok = ApplyAttrs(bytes_, &pos, f, nftnl_flowtable_set_data, nftnl_flowtable_set_array);
        if (ok) {
          nlmsghdr* nlh = Begin(rec, bound);
          nftnl_flowtable_nlmsg_build_payload(nlh, f);
          End(nlh);
        }
        nftnl_flowtable_free(f);
        break;
      }
      case ObjectKind::Rule:
      case ObjectKind::Elements:
        break;
    }
    return ok || Fail(rec.opIndex, EINVAL, "libnftnl refused an attribute");
  }

  // One reused nftnl_rule for the rule's own attributes; its expressions are
  // written into one NFTA_RULE_EXPRESSIONS nest here, so that its size is checked.
  bool AddRule(const Record& rec) {
    if (rule_ == nullptr) rule_ = nftnl_rule_alloc();
    size_t pos = rec.attrs;
    uint64_t ids = 0;
    bool ok = ApplyAttrs(bytes_, &pos, rule_, nftnl_rule_set_data, NoArray, &ids);
    exprs_.clear();
    pos = rec.body;
    for (uint32_t k = 0; ok && k < rec.count; k++) {
      char name[256];
      uint8_t nameLen = bytes_[pos];
      memcpy(name, bytes_ + pos + 1, nameLen);
      name[nameLen] = '\0';
      pos += 1 + nameLen;
      nftnl_expr* ex = nftnl_expr_alloc(name);
      if (ex == nullptr) {
        ok = false;
        break;
      }
      exprs_.push_back(ex);
      ok = ApplyAttrs(bytes_, &pos, ex, nftnl_expr_set, NoArray);
    }
    if (ok) {
      nlmsghdr* nlh = Begin(rec, rec.bound);
      nftnl_rule_nlmsg_build_payload(nlh, rule_);
      if (!exprs_.empty()) {
        nlattr* list = mnl_attr_nest_start(nlh, NFTA_RULE_EXPRESSIONS);
        for (nftnl_expr* ex : exprs_) {
          nlattr* elem = mnl_attr_nest_start(nlh, NFTA_LIST_ELEM);
          nftnl_expr_build_payload(nlh, ex);
          mnl_attr_nest_end(nlh, elem);
        }
        if (reinterpret_cast<char*>(mnl_nlmsg_get_payload_tail(nlh)) - reinterpret_cast<char*>(list) > 0xffff) {
          Abandon();
          ok = Fail(rec.opIndex, EMSGSIZE, "the rule's expressions exceed 64 KiB");
        } else {
          mnl_attr_nest_end(nlh, list);
        }
      }
      if (ok) End(nlh);
    } else {
      Fail(rec.opIndex, EINVAL, "libnftnl refused an expression or attribute");
    }
    for (nftnl_expr* ex : exprs_) nftnl_expr_free(ex);
    UnsetAttrs(rule_, ids, nftnl_rule_unset);
    return ok;
  }

  // Netlink bound of the element at bytes[pos]; *next is set past it.
  size_t ElementBound(size_t pos, size_t* next) const {
    pos += 4;  // op index
    size_t bound = 16;
    uint16_t n = LeU16(bytes_ + pos);
    pos += 2;
    for (uint16_t i = 0; i < n; i++) {
      const AttrView a = NextAttr(bytes_, &pos);
      bound += NetlinkAttrBound(*ElementAttrRules().Find(a.id), a.len);
    }
    *next = pos;
    return bound;
  }

  // An element list: messages of at most kElementsPerMessage elements and
  // kMaxNestBytes of them, each naming the set; one reused nftnl_set_elem.
  bool AddElements(const Record& rec) {
    nftnl_set* s = nftnl_set_alloc();
    size_t pos = rec.attrs;
    const size_t setBound = rec.bound;
    bool ok = ApplyAttrs(bytes_, &pos, s, nftnl_set_set_data, NoArray);
    if (!ok) {
      nftnl_set_free(s);
      return Fail(rec.opIndex, EINVAL, "libnftnl refused a set attribute");
    }
    if (elem_ == nullptr) elem_ = nftnl_set_elem_alloc();
    pos = rec.body;
    uint32_t done = 0;
    do {
      // How many elements the next message takes.
      uint32_t n = 0;
      size_t nest = 0;
      size_t scan = pos;
      while (done + n < rec.count && n < kElementsPerMessage) {
        size_t next;
        size_t one = ElementBound(scan, &next);
        if (n > 0 && nest + one > kMaxNestBytes) break;
        nest += one;
        scan = next;
        n++;
      }
      if (nest > kMaxNestBytes) {
        ok = Fail(LeU32(bytes_ + pos), EMSGSIZE, "the element exceeds 64 KiB");
        break;
      }
      nlmsghdr* nlh = Begin(rec, setBound + nest + 64, n);
      nftnl_set_elems_nlmsg_build_payload(nlh, s);  // the set's names: its element list is empty
      if (n > 0) {
        nlattr* list = mnl_attr_nest_start(nlh, NFTA_SET_ELEM_LIST_ELEMENTS);
        for (uint32_t k = 0; k < n; k++) {
          const uint32_t opIndex = LeU32(bytes_ + pos);
          elementOps.push_back(opIndex);
          pos += 4;
          uint64_t ids = 0;
          ok = ApplyAttrs(bytes_, &pos, elem_, nftnl_set_elem_set, NoArray, &ids);
          if (ok) nftnl_set_elem_nlmsg_build(nlh, elem_, int(k + 1));
          UnsetAttrs(elem_, ids, nftnl_set_elem_unset);
          if (!ok) {
            Fail(opIndex, EINVAL, "libnftnl refused an element attribute");
            break;
          }
        }
        mnl_attr_nest_end(nlh, list);
      }
      if (!ok) {
        Abandon();
        break;
      }
      End(nlh);
      done += n;
      // The set's attributes were read once, into s: only what follows pos is read again.
      if (b_->pagesOwned) ReleaseBefore(pos);
    } while (done < rec.count);
    nftnl_set_free(s);
    return ok;
  }

  size_t& releasedBytes_;
  const Batch* b_ = nullptr;
  const uint8_t* bytes_ = nullptr;
  size_t released_ = 0;
  std::vector<OperationFailure>* failures_ = nullptr;
  uint32_t seq_ = 0;
  nftnl_rule* rule_ = nullptr;
  nftnl_set_elem* elem_ = nullptr;
  std::vector<nftnl_expr*> exprs_;
};

TransactionBuilder::TransactionBuilder(BuiltBatch* out, uint32_t baseSeq, size_t expectedBytes)
    : builder_(std::make_unique<BatchBuilder>(out, baseSeq, expectedBytes)) {}
TransactionBuilder::~TransactionBuilder() = default;
void TransactionBuilder::Add(const Batch& batch, std::vector<OperationFailure>* failures) { builder_->Add(batch, failures); }
void TransactionBuilder::Finish() { builder_->Finish(); }

void BuildMessages(const Batch& batch, uint32_t baseSeq, BuiltBatch* out, std::vector<OperationFailure>* failures) {
  TransactionBuilder builder(out, baseSeq, batch.netlinkSize);
  builder.Add(batch, failures);
  builder.Finish();
}

int64_t ElementAtOffset(const BuiltBatch& built, const MessageInfo& m, uint32_t offset) {
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(built.buffer.data() + m.offset);
  const char* base = reinterpret_cast<const char*>(nlh);
  size_t pos = NLMSG_HDRLEN + MNL_ALIGN(sizeof(nfgenmsg));
  while (pos + sizeof(nlattr) <= nlh->nlmsg_len) {
    const auto* attr = reinterpret_cast<const nlattr*>(base + pos);
    if (attr->nla_len < sizeof(nlattr)) break;
    if ((attr->nla_type & NLA_TYPE_MASK) == NFTA_SET_ELEM_LIST_ELEMENTS) {
      size_t inner = pos + MNL_ALIGN(sizeof(nlattr));
      const size_t end = pos + attr->nla_len;
      uint32_t k = 0;
      while (inner + sizeof(nlattr) <= end) {
        const auto* elem = reinterpret_cast<const nlattr*>(base + inner);
        if (elem->nla_len < sizeof(nlattr)) break;
        if (offset >= inner && offset < inner + elem->nla_len && k < m.elemCount)
          return built.elementOps[m.firstElement + k];
        inner += MNL_ALIGN(elem->nla_len);
        k++;
      }
    }
    pos += MNL_ALIGN(attr->nla_len);
  }
  return -1;
}


}  // namespace knp
