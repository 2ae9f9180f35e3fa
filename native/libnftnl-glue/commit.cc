#include "commit.h"

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
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "netlink-socket.h"

namespace knp {

namespace {

uint64_t ReadLe(const uint8_t* p, uint32_t len) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < len; i++) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

// Hands each attribute to the matching libnftnl setter, in host byte order for
// integers. Setter is one of the nftnl_*_set_data functions.
template <typename Obj, typename SetData, typename SetArray>
bool ApplyAttrs(const Batch& b, AttrRange range, Obj* obj, SetData setData, SetArray setArray) {
  for (uint32_t i = 0; i < range.count; i++) {
    const Attr& a = b.attrs[range.first + i];
    const uint8_t* p = b.bytes.data() + a.offset;
    int rc = 0;
    switch (a.type) {
      case AttrType::U8: {
        uint8_t v = p[0];
        rc = setData(obj, a.id, &v, 1);
        break;
      }
      case AttrType::U16: {
        uint16_t v = uint16_t(ReadLe(p, 2));
        rc = setData(obj, a.id, &v, 2);
        break;
      }
      case AttrType::U32: {
        uint32_t v = uint32_t(ReadLe(p, 4));
        rc = setData(obj, a.id, &v, 4);
        break;
      }
      case AttrType::U64: {
        uint64_t v = ReadLe(p, 8);
        rc = setData(obj, a.id, &v, 8);
        break;
      }
      case AttrType::Str: {
        std::string s(reinterpret_cast<const char*>(p), a.len);
        rc = setData(obj, a.id, s.c_str(), uint32_t(s.size() + 1));
        break;
      }
      case AttrType::Bytes:
        rc = setData(obj, a.id, p, a.len);
        break;
      case AttrType::StrArray: {
        std::vector<std::string> items;
        uint16_t n = uint16_t(ReadLe(p, 2));
        uint32_t pos = 2;
        for (uint16_t k = 0; k < n; k++) {
          uint16_t l = uint16_t(ReadLe(p + pos, 2));
          items.emplace_back(reinterpret_cast<const char*>(p + pos + 2), l);
          pos += 2 + l;
        }
        std::vector<const char*> ptrs;
        for (auto& s : items) ptrs.push_back(s.c_str());
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

// An upper bound of the bytes one message needs: libnftnl writes without bounds checks.
size_t AttrsBound(const Batch& b, AttrRange r) {
  size_t n = 0;
  for (uint32_t i = 0; i < r.count; i++) n += b.attrs[r.first + i].len * 2 + 32;
  return n;
}

struct MessageInfo {
  uint32_t record;
  uint32_t firstElem;
  uint32_t elemCount;
  size_t offset;  // of its nlmsghdr in the send buffer
};

class BatchBuilder {
 public:
  explicit BatchBuilder(const Batch& b) : b_(b) {}

  bool Build(uint32_t baseSeq, std::string* error) {
    seq_ = baseSeq;
    Reserve(64);
    nftnl_batch_begin(At(), seq_++);
    Commit();
    for (uint32_t r = 0; r < b_.records.size(); r++) {
      const Record& rec = b_.records[r];
      if (rec.kind == ObjectKind::Elements) {
        uint32_t done = 0;
        do {
          uint32_t n = std::min(kElementsPerMessage, rec.elemCount - done);
          if (!AddElements(r, rec.firstElem + done, n, error)) return false;
          done += n;
        } while (done < rec.elemCount);
      } else if (!AddObject(r, error)) {
        return false;
      }
    }
    Reserve(64);
    nftnl_batch_end(At(), seq_++);
    Commit();
    return true;
  }

  std::vector<char> buffer;
  std::vector<MessageInfo> messages;  // messages[i] has sequence number baseSeq + 1 + i

 private:
  void Reserve(size_t n) { buffer.resize(used_ + n); }
  char* At() { return buffer.data() + used_; }
  void Commit() { used_ += reinterpret_cast<nlmsghdr*>(At())->nlmsg_len; buffer.resize(used_); }
  nlmsghdr* Header(const Record& rec, size_t bound, uint32_t record, uint32_t firstElem, uint32_t elemCount) {
    Reserve(bound);
    messages.push_back({record, firstElem, elemCount, used_});
    return nftnl_nlmsg_build_hdr(At(), rec.msgType, rec.family, rec.flags, seq_++);
  }

  bool AddObject(uint32_t r, std::string* error) {
    const Record& rec = b_.records[r];
    size_t bound = 512 + AttrsBound(b_, rec.attrs);
    for (const Expr& e : rec.exprs) bound += 64 + e.name.size() + AttrsBound(b_, e.attrs);
    bool ok = false;
    switch (rec.kind) {
      case ObjectKind::Table: {
        nftnl_table* t = nftnl_table_alloc();
        ok = ApplyAttrs(b_, rec.attrs, t, nftnl_table_set_data, NoArray);
        if (ok) nftnl_table_nlmsg_build_payload(Header(rec, bound, r, 0, 0), t);
        nftnl_table_free(t);
        break;
      }
      case ObjectKind::Chain: {
        nftnl_chain* c = nftnl_chain_alloc();
        ok = ApplyAttrs(b_, rec.attrs, c, nftnl_chain_set_data, nftnl_chain_set_array);
        if (ok) nftnl_chain_nlmsg_build_payload(Header(rec, bound, r, 0, 0), c);
        nftnl_chain_free(c);
        break;
      }
      case ObjectKind::Rule: {
        nftnl_rule* ru = nftnl_rule_alloc();
        ok = ApplyAttrs(b_, rec.attrs, ru, nftnl_rule_set_data, NoArray);
        for (const Expr& e : rec.exprs) {
          if (!ok) break;
          nftnl_expr* ex = nftnl_expr_alloc(e.name.c_str());
          if (ex == nullptr) {
            ok = false;
            break;
          }
          ok = ApplyAttrs(b_, e.attrs, ex, nftnl_expr_set, NoArray);
          nftnl_rule_add_expr(ru, ex);
        }
        if (ok) nftnl_rule_nlmsg_build_payload(Header(rec, bound, r, 0, 0), ru);
        nftnl_rule_free(ru);
        break;
      }
      case ObjectKind::Set: {
        nftnl_set* s = nftnl_set_alloc();
        ok = ApplyAttrs(b_, rec.attrs, s, nftnl_set_set_data, NoArray);
        if (ok) nftnl_set_nlmsg_build_payload(Header(rec, bound, r, 0, 0), s);
        nftnl_set_free(s);
        break;
      }
      case ObjectKind::Flowtable: {
        nftnl_flowtable* f = nftnl_flowtable_alloc();
        ok = ApplyAttrs(b_, rec.attrs, f, nftnl_flowtable_set_data, nftnl_flowtable_set_array);
        if (ok) nftnl_flowtable_nlmsg_build_payload(Header(rec, bound, r, 0, 0), f);
        nftnl_flowtable_free(f);
        break;
      }
      case ObjectKind::Elements:
        break;
    }
    if (!ok) {
      *error = "operation " + std::to_string(rec.opIndex) + ": libnftnl refused an attribute";
      return false;
    }
    Commit();
    return true;
  }

  bool AddElements(uint32_t r, uint32_t first, uint32_t count, std::string* error) {
    const Record& rec = b_.records[r];
    nftnl_set* s = nftnl_set_alloc();
    bool ok = ApplyAttrs(b_, rec.attrs, s, nftnl_set_set_data, NoArray);
    size_t bound = 512 + AttrsBound(b_, rec.attrs);
    for (uint32_t i = first; ok && i < first + count; i++) {
      const Elem& el = b_.elems[i];
      bound += 64 + AttrsBound(b_, el.attrs);
      nftnl_set_elem* e = nftnl_set_elem_alloc();
      ok = ApplyAttrs(b_, el.attrs, e, nftnl_set_elem_set, NoArray);
      nftnl_set_elem_add(s, e);
      if (!ok) *error = "operation " + std::to_string(el.opIndex) + ": libnftnl refused an element attribute";
    }
    if (ok) {
      nftnl_set_elems_nlmsg_build_payload(Header(rec, bound, r, first, count), s);
      Commit();
    } else if (error->empty()) {
      *error = "operation " + std::to_string(rec.opIndex) + ": libnftnl refused a set attribute";
    }
    nftnl_set_free(s);
    return ok;
  }

  const Batch& b_;
  size_t used_ = 0;
  uint32_t seq_ = 0;
};

// Which element of an element message the kernel's attribute offset points into.
int64_t ElementAtOffset(const BatchBuilder& builder, const MessageInfo& m, const Batch& b, uint32_t offset) {
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(builder.buffer.data() + m.offset);
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
          return b.elems[m.firstElem + k].opIndex;
        inner += MNL_ALIGN(elem->nla_len);
        k++;
      }
    }
    pos += MNL_ALIGN(attr->nla_len);
  }
  return -1;
}

}  // namespace

void CommitBatch(const Batch& batch, const std::string& netnsPath, CommitResult* result) {
  NetlinkSocket sock;
  if (!sock.Open(netnsPath, &result->transportError)) {
    result->transportErrno = errno ? errno : EIO;
    return;
  }
  const uint32_t baseSeq = sock.NextSeq();
  BatchBuilder builder(batch);
  std::string buildError;
  if (!builder.Build(baseSeq, &buildError)) {
    result->transportError = buildError;
    result->transportErrno = EINVAL;
    return;
  }
  result->messages = uint32_t(builder.messages.size());
  result->bytes = builder.buffer.size();
  // Every failing message may answer with an error; room for all of them.
  sock.SizeBuffers(builder.buffer.size() + 65536, std::max<size_t>(1 << 20, builder.messages.size() * 320));
  if (send(sock.fd(), builder.buffer.data(), builder.buffer.size(), 0) < 0) {
    result->transportErrno = errno;
    result->transportError = std::string("sending the batch: ") + strerror(errno);
    return;
  }
  // The kernel processes the batch inside send(), so its errors are already
  // queued; a generation request behind them marks where they end.
  // Sequence numbers: batch begin baseSeq, messages baseSeq+1..N, end N+1, sentinel N+2.
  const uint32_t lastBatchSeq = baseSeq + uint32_t(builder.messages.size()) + 1;
  char req[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* gen = nftnl_nlmsg_build_hdr(req, NFT_MSG_GETGEN, AF_UNSPEC, NLM_F_ACK, lastBatchSeq + 1);
  std::vector<char> buf(1 << 18);
  bool sentinelSent = false;
  auto handleError = [&](const nlmsghdr* nlh) {
    const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
    if (err->error == 0) return;
    std::string text;
    uint32_t offset = 0;
    bool hasOffset = false;
    ParseExtAck(nlh, &text, &offset, &hasOffset);
    if (text.empty()) text = strerror(-err->error);
    int64_t index = -1;
    uint32_t seq = nlh->nlmsg_seq;
    if (seq > baseSeq && seq < lastBatchSeq) {
      const MessageInfo& m = builder.messages[seq - baseSeq - 1];
      const Record& rec = batch.records[m.record];
      index = rec.opIndex;
      if (rec.kind == ObjectKind::Elements && m.elemCount > 0) {
        index = batch.elems[m.firstElem].opIndex;
        if (hasOffset) {
          int64_t at = ElementAtOffset(builder, m, batch, offset);
          if (at >= 0) index = at;
        }
      }
    }
    result->failures.push_back({index, -err->error, text});
  };
  const uint32_t sentinelSeq = gen->nlmsg_seq;
  for (;;) {
    if (!sentinelSent) {
      if (send(sock.fd(), gen, gen->nlmsg_len, 0) < 0) {
        result->transportErrno = errno;
        result->transportError = std::string("sending the generation request: ") + strerror(errno);
        return;
      }
      sentinelSent = true;
    }
    ssize_t n = recv(sock.fd(), buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      // ENOBUFS: more errors than the receive buffer held; some are lost.
      result->transportErrno = errno;
      result->transportError = std::string("reading the batch's answers: ") + strerror(errno);
      if (errno == ENOBUFS && result->failures.empty())
        result->failures.push_back({-1, ENOBUFS, "the batch failed; its errors overflowed the receive buffer"});
      return;
    }
    int len = int(n);
    for (auto* nlh = reinterpret_cast<const nlmsghdr*>(buf.data()); mnl_nlmsg_ok(nlh, len);
         nlh = mnl_nlmsg_next(nlh, &len)) {
      if (nlh->nlmsg_seq == sentinelSeq) {
        if (nlh->nlmsg_type == NLMSG_ERROR) return;  // the ack ends the sentinel's answer
        continue;
      }
      if (nlh->nlmsg_type == NLMSG_ERROR) handleError(nlh);
    }
  }
}

}  // namespace knp
