#include "list.h"

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/flowtable.h>
#include <libnftnl/gen.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter/nf_tables.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "batch.h"
#include "netlink/netlink-socket.h"

namespace knp {

namespace {

constexpr uint32_t kMagic = 0x4c504e4b;
constexpr int kMaxAttempts = 8;
// Attributes that hold pointers to nested libnftnl objects, never raw bytes.
constexpr uint16_t kDynsetExpr = NFTNL_EXPR_DYNSET_EXPR;
constexpr uint16_t kDynsetExpressions = NFTNL_EXPR_DYNSET_EXPRESSIONS;

class Writer {
 public:
  std::vector<uint8_t> out;
  void U8(uint8_t v) { out.push_back(v); }
  void U16(uint16_t v) {
    out.push_back(uint8_t(v));
    out.push_back(uint8_t(v >> 8));
  }
  void U32(uint32_t v) {
    for (int i = 0; i < 4; i++) out.push_back(uint8_t(v >> (8 * i)));
  }
  void Bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  }
  size_t Mark() {
    U16(0);
    return out.size() - 2;
  }
  void Patch(size_t at, uint16_t v) {
    out[at] = uint8_t(v);
    out[at + 1] = uint8_t(v >> 8);
  }
  void Attr(uint16_t id, AttrType type, const void* p, uint32_t len) {
    U16(id);
    U8(uint8_t(type));
    U32(len);
    Bytes(p, len);
  }
  void StrArray(uint16_t id, const char* const* items) {
    Writer tmp;
    uint16_t n = 0;
    for (const char* const* it = items; it && *it; it++) n++;
    tmp.U16(n);
    for (const char* const* it = items; it && *it; it++) {
      uint16_t l = uint16_t(strnlen(*it, kMaxNameLength));
      tmp.U16(l);
      tmp.Bytes(*it, l);
    }
    Attr(id, AttrType::StrArray, tmp.out.data(), uint32_t(tmp.out.size()));
  }
};

// Writes every set attribute in [0, max) that get() returns, except the skipped ones.
// `strings` lists the attributes that are C strings: libnftnl 1.2.4 reports a
// wrong length for some (NFTNL_CHAIN_TYPE answers 4), so their length is measured.
template <typename Obj, typename IsSet, typename Get>
void WriteAttrs(Writer& w, Obj* obj, uint16_t max, IsSet isSet, Get get,
                std::initializer_list<uint16_t> skip = {}, std::initializer_list<uint16_t> strings = {}) {
  size_t mark = w.Mark();
  uint16_t n = 0;
  for (uint16_t id = 0; id < max; id++) {
    bool skipped = false;
    for (uint16_t s : skip) skipped |= s == id;
    if (skipped || !isSet(obj, id)) continue;
    uint32_t len = 0;
    const void* p = get(obj, id, &len);
    if (p == nullptr) continue;
    bool isString = false;
    for (uint16_t s : strings) isString |= s == id;
    if (isString) len = uint32_t(strnlen(static_cast<const char*>(p), kMaxNameLength + 1)) + 1;
    if (len > 65536) continue;
    w.Attr(id, AttrType::Bytes, p, len);
    n++;
  }
  w.Patch(mark, n);
}

// libnftnl 1.2.4 declares nftnl_flowtable_get_data but does not export it (a
// build that takes its address cannot even be loaded, and a call would abort
// the process): the exported getter, with lengths from the attribute's type.
const void* FlowtableGetData(const nftnl_flowtable* f, uint16_t attr, uint32_t* len) {
  switch (attr) {
    case NFTNL_FLOWTABLE_NAME:
    case NFTNL_FLOWTABLE_TABLE:
      *len = 0;  // strings: WriteAttrs measures them
      break;
    case NFTNL_FLOWTABLE_HANDLE:
      *len = 8;
      break;
    case NFTNL_FLOWTABLE_FAMILY:
    case NFTNL_FLOWTABLE_HOOKNUM:
    case NFTNL_FLOWTABLE_PRIO:
    case NFTNL_FLOWTABLE_USE:
    case NFTNL_FLOWTABLE_SIZE:
    case NFTNL_FLOWTABLE_FLAGS:
      *len = 4;
      break;
    default:
      return nullptr;  // arrays and attributes this code does not know
  }
  return nftnl_flowtable_get(f, attr);
}

// The bytes that make an element itself in its set: its key, the end of its
// interval and its flags (an interval's end may share its key with the start
// of the next one).
struct ElementIdentity {
  std::string_view key, keyEnd;
  uint32_t flags = 0;
  explicit ElementIdentity(nftnl_set_elem* e) {
    key = Bytes(e, NFTNL_SET_ELEM_KEY);
    keyEnd = Bytes(e, NFTNL_SET_ELEM_KEY_END);
    if (nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_FLAGS)) flags = nftnl_set_elem_get_u32(e, NFTNL_SET_ELEM_FLAGS);
  }
  bool operator==(const ElementIdentity& o) const { return key == o.key && keyEnd == o.keyEnd && flags == o.flags; }
  uint64_t Hash() const {
    uint64_t h = 1469598103934665603ull ^ flags;
    for (std::string_view part : {key, keyEnd}) {
      for (char c : part) h = (h ^ uint8_t(c)) * 1099511628211ull;
      h = (h ^ 0xff) * 1099511628211ull;
    }
    return h;
  }

 private:
  static std::string_view Bytes(nftnl_set_elem* e, uint16_t attr) {
    if (!nftnl_set_elem_is_set(e, attr)) return {};
    uint32_t len = 0;
    const char* data = static_cast<const char*>(nftnl_set_elem_get(e, attr, &len));
    return {data, len};
  }
};

// A set holds each element once, so an element listed twice proves the dump
// was torn. The kernel dumps a set as a walk restarted for every message,
// skipping as many elements as the messages before it carried; when it
// rehashes a hash set in between (it grows or shrinks one in the background
// after a commit), the walk's order changes, and some elements come twice and
// as many not at all, with no generation change and no NLM_F_DUMP_INTR to tell.
bool RepeatsAnElement(nftnl_set* s) {
  std::vector<std::pair<uint64_t, nftnl_set_elem*>> hashed;
  nftnl_set_elems_iter* it = nftnl_set_elems_iter_create(s);
  for (nftnl_set_elem* e = nftnl_set_elems_iter_next(it); e != nullptr; e = nftnl_set_elems_iter_next(it))
    hashed.emplace_back(ElementIdentity(e).Hash(), e);
  nftnl_set_elems_iter_destroy(it);
  std::sort(hashed.begin(), hashed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 1; i < hashed.size(); i++) {
    // Elements of one hash are few: each is compared with the others of its hash.
    for (size_t j = i; j > 0 && hashed[j - 1].first == hashed[i].first; j--)
      if (ElementIdentity(hashed[j - 1].second) == ElementIdentity(hashed[i].second)) return true;
  }
  return false;
}

struct Dumper {
  NetlinkSocket& sock;
  uint32_t family;
  const std::string& table;
  Writer w;
  bool interrupted = false;
  std::string error;
  int err = 0;

  nlmsghdr* Hdr(char* buf, uint16_t type, uint16_t flags) {
    return nftnl_nlmsg_build_hdr(buf, type, uint16_t(family), flags, sock.NextSeq());
  }

  int Run(nlmsghdr* req, const std::function<void(const nlmsghdr*)>& cb) {
    return sock.Request(req, cb, &interrupted, &error);
  }

  bool Table(bool* found) {
    char buf[MNL_SOCKET_BUFFER_SIZE];
    nftnl_table* t = nftnl_table_alloc();
    nftnl_table_set_str(t, NFTNL_TABLE_NAME, table.c_str());
    nlmsghdr* req = Hdr(buf, NFT_MSG_GETTABLE, NLM_F_ACK);
    nftnl_table_nlmsg_build_payload(req, t);
    nftnl_table_free(t);
    *found = false;
    int rc = Run(req, [&](const nlmsghdr* nlh) {
      nftnl_table* got = nftnl_table_alloc();
      if (nftnl_table_nlmsg_parse(nlh, got) >= 0) {
        w.U8(uint8_t(ObjectKind::Table));
        WriteAttrs(w, got, __NFTNL_TABLE_MAX, nftnl_table_is_set, nftnl_table_get_data, {}, {NFTNL_TABLE_NAME});
        *found = true;
      }
      nftnl_table_free(got);
    });
    if (rc == ENOENT) return true;
    err = rc;
    return rc == 0;
  }

  bool Chains(std::vector<std::string>* names) {
    char buf[MNL_SOCKET_BUFFER_SIZE];
    nftnl_chain* c = nftnl_chain_alloc();
    nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table.c_str());
    nlmsghdr* req = Hdr(buf, NFT_MSG_GETCHAIN, NLM_F_DUMP);
    nftnl_chain_nlmsg_build_payload(req, c);
    nftnl_chain_free(c);
    err = Run(req, [&](const nlmsghdr* nlh) {
      nftnl_chain* got = nftnl_chain_alloc();
      if (nftnl_chain_nlmsg_parse(nlh, got) >= 0 && table == nftnl_chain_get_str(got, NFTNL_CHAIN_TABLE)) {
        w.U8(uint8_t(ObjectKind::Chain));
        names->push_back(nftnl_chain_get_str(got, NFTNL_CHAIN_NAME));
        size_t mark = w.out.size();
        WriteAttrs(w, got, __NFTNL_CHAIN_MAX, nftnl_chain_is_set, nftnl_chain_get_data, {NFTNL_CHAIN_DEVICES},
                   {NFTNL_CHAIN_NAME, NFTNL_CHAIN_TABLE, NFTNL_CHAIN_TYPE, NFTNL_CHAIN_DEV});
        if (nftnl_chain_is_set(got, NFTNL_CHAIN_DEVICES)) {
          uint16_t n = uint16_t(w.out[mark] | (w.out[mark + 1] << 8));
          w.StrArray(NFTNL_CHAIN_DEVICES, nftnl_chain_get_array(got, NFTNL_CHAIN_DEVICES));
          w.Patch(mark, n + 1);
        }
      }
      nftnl_chain_free(got);
    });
    return err == 0;
  }

  // One chain's rules. A dump of the whole table is quadratic: the kernel
  // resumes it for every 32 KiB message by walking the table's rules from the
  // first, skipping as many as it sent (at 100k Services, 200k rules: ~5 s).
  // Asked chain by chain, it finds the chain by its hash and walks only that
  // chain's rules (~1 s for the same rules, a request per chain).
  bool Rules(const std::string& chain) {
    char buf[MNL_SOCKET_BUFFER_SIZE];
    nftnl_rule* r = nftnl_rule_alloc();
    nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table.c_str());
    nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain.c_str());
    nlmsghdr* req = Hdr(buf, NFT_MSG_GETRULE, NLM_F_DUMP);
    nftnl_rule_nlmsg_build_payload(req, r);
    nftnl_rule_free(r);
    err = Run(req, [&](const nlmsghdr* nlh) {
      nftnl_rule* got = nftnl_rule_alloc();
      if (nftnl_rule_nlmsg_parse(nlh, got) >= 0 && table == nftnl_rule_get_str(got, NFTNL_RULE_TABLE)) {
        w.U8(uint8_t(ObjectKind::Rule));
        WriteAttrs(w, got, __NFTNL_RULE_MAX, nftnl_rule_is_set, nftnl_rule_get_data, {}, {NFTNL_RULE_TABLE, NFTNL_RULE_CHAIN});
        size_t mark = w.Mark();
        uint16_t n = 0;
        std::pair<Writer*, uint16_t*> ctx{&w, &n};
        nftnl_expr_foreach(
            got,
            [](nftnl_expr* e, void* data) -> int {
              auto* self = static_cast<std::pair<Writer*, uint16_t*>*>(data);
              const char* name = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);
              uint8_t l = uint8_t(strnlen(name, 255));
              self->first->U8(l);
              self->first->Bytes(name, l);
              bool dynset = strcmp(name, "dynset") == 0;
              WriteAttrs(*self->first, e, 32, nftnl_expr_is_set, nftnl_expr_get,
                         dynset ? std::initializer_list<uint16_t>{NFTNL_EXPR_NAME, kDynsetExpr, kDynsetExpressions}
                                : std::initializer_list<uint16_t>{NFTNL_EXPR_NAME});
              (*self->second)++;
              return 0;
            },
            &ctx);
        w.Patch(mark, n);
      }
      nftnl_rule_free(got);
    });
    return err == 0;
  }

  bool Sets(std::vector<std::string>* names) {
    char buf[MNL_SOCKET_BUFFER_SIZE];
    nftnl_set* s = nftnl_set_alloc();
    nftnl_set_set_str(s, NFTNL_SET_TABLE, table.c_str());
    nlmsghdr* req = Hdr(buf, NFT_MSG_GETSET, NLM_F_DUMP);
    nftnl_set_nlmsg_build_payload(req, s);
    nftnl_set_free(s);
    err = Run(req, [&](const nlmsghdr* nlh) {
      nftnl_set* got = nftnl_set_alloc();
      if (nftnl_set_nlmsg_parse(nlh, got) >= 0 && table == nftnl_set_get_str(got, NFTNL_SET_TABLE)) {
        w.U8(uint8_t(ObjectKind::Set));
        WriteAttrs(w, got, __NFTNL_SET_MAX, nftnl_set_is_set, nftnl_set_get_data,
                   {NFTNL_SET_EXPR, NFTNL_SET_EXPRESSIONS}, {NFTNL_SET_TABLE, NFTNL_SET_NAME});
        names->push_back(nftnl_set_get_str(got, NFTNL_SET_NAME));
      }
      nftnl_set_free(got);
    });
    return err == 0;
  }

  bool Elements(const std::string& set) {
    char buf[MNL_SOCKET_BUFFER_SIZE];
    nftnl_set* s = nftnl_set_alloc();
    nftnl_set_set_str(s, NFTNL_SET_TABLE, table.c_str());
    nftnl_set_set_str(s, NFTNL_SET_NAME, set.c_str());
    nlmsghdr* req = Hdr(buf, NFT_MSG_GETSETELEM, NLM_F_DUMP);
    nftnl_set_elems_nlmsg_build_payload(req, s);
    nftnl_set_free(s);
    nftnl_set* got = nftnl_set_alloc();
    err = Run(req, [&](const nlmsghdr* nlh) { nftnl_set_elems_nlmsg_parse(nlh, got); });
    if (err == 0 && RepeatsAnElement(got)) interrupted = true;
    if (err == 0) {
      w.U8(uint8_t(ObjectKind::Elements));
      w.U16(1);
      w.Attr(NFTNL_SET_NAME, AttrType::Bytes, set.c_str(), uint32_t(set.size() + 1));
      size_t countAt = w.out.size();
      w.U32(0);
      uint32_t n = 0;
      nftnl_set_elems_iter* it = nftnl_set_elems_iter_create(got);
      for (nftnl_set_elem* e = nftnl_set_elems_iter_next(it); e != nullptr; e = nftnl_set_elems_iter_next(it)) {
        WriteAttrs(w, e, __NFTNL_SET_ELEM_MAX, nftnl_set_elem_is_set, nftnl_set_elem_get,
                   {NFTNL_SET_ELEM_EXPR, NFTNL_SET_ELEM_EXPRESSIONS}, {NFTNL_SET_ELEM_CHAIN, NFTNL_SET_ELEM_OBJREF});
        n++;
      }
      nftnl_set_elems_iter_destroy(it);
      for (int i = 0; i < 4; i++) w.out[countAt + i] = uint8_t(n >> (8 * i));
    }
    nftnl_set_free(got);
    return err == 0;
  }

  bool Flowtables() {
    char buf[MNL_SOCKET_BUFFER_SIZE];
    nftnl_flowtable* f = nftnl_flowtable_alloc();
    nftnl_flowtable_set_str(f, NFTNL_FLOWTABLE_TABLE, table.c_str());
    nlmsghdr* req = Hdr(buf, NFT_MSG_GETFLOWTABLE, NLM_F_DUMP);
    nftnl_flowtable_nlmsg_build_payload(req, f);
    nftnl_flowtable_free(f);
    err = Run(req, [&](const nlmsghdr* nlh) {
      nftnl_flowtable* got = nftnl_flowtable_alloc();
      if (nftnl_flowtable_nlmsg_parse(nlh, got) >= 0 &&
          table == nftnl_flowtable_get_str(got, NFTNL_FLOWTABLE_TABLE)) {
        w.U8(uint8_t(ObjectKind::Flowtable));
        size_t mark = w.out.size();
        WriteAttrs(w, got, __NFTNL_FLOWTABLE_MAX, nftnl_flowtable_is_set, FlowtableGetData,
                   {NFTNL_FLOWTABLE_DEVICES}, {NFTNL_FLOWTABLE_NAME, NFTNL_FLOWTABLE_TABLE});
        if (nftnl_flowtable_is_set(got, NFTNL_FLOWTABLE_DEVICES)) {
          uint16_t n = uint16_t(w.out[mark] | (w.out[mark + 1] << 8));
          w.StrArray(NFTNL_FLOWTABLE_DEVICES, nftnl_flowtable_get_array(got, NFTNL_FLOWTABLE_DEVICES));
          w.Patch(mark, n + 1);
        }
      }
      nftnl_flowtable_free(got);
    });
    return err == 0;
  }
};

bool Generation(NetlinkSocket& sock, uint32_t* gen, std::string* error, int* errorNumber) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* req = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETGEN, AF_UNSPEC, NLM_F_ACK, sock.NextSeq());
  bool interrupted = false;
  bool have = false;
  int rc = sock.Request(
      req,
      [&](const nlmsghdr* nlh) {
        nftnl_gen* g = nftnl_gen_alloc();
        if (nftnl_gen_nlmsg_parse(nlh, g) >= 0) {
          *gen = nftnl_gen_get_u32(g, NFTNL_GEN_ID);
          have = true;
        }
        nftnl_gen_free(g);
      },
      &interrupted, error);
  if (rc != 0 || !have) {
    *errorNumber = rc ? rc : EPROTO;
    if (error->empty()) *error = "no generation id in the kernel's answer";
    return false;
  }
  return true;
}

}  // namespace

bool ReadGeneration(const std::string& netnsPath, uint32_t* generation, std::string* error, int* errorNumber) {
  NetlinkSocket sock;
  if (!sock.Open(netnsPath, error)) {
    *errorNumber = EIO;
    return false;
  }
  return Generation(sock, generation, error, errorNumber);
}

void ListTable(const std::string& netnsPath, uint32_t family, const std::string& table,
               const std::vector<std::string>& skipElements, ListResult* result) {
  NetlinkSocket sock;
  if (!sock.Open(netnsPath, &result->error)) {
    result->errorNumber = EIO;
    return;
  }
  sock.SizeBuffers(1 << 20, 8 << 20);
  for (int attempt = 0; attempt < kMaxAttempts; attempt++) {
    uint32_t before = 0, after = 0;
    if (!Generation(sock, &before, &result->error, &result->errorNumber)) return;
    Dumper d{sock, family, table, {}, false, {}, 0};
    d.w.U32(kMagic);
    d.w.U32(before);
    bool found = false;
    std::vector<std::string> sets;
    bool ok = d.Table(&found);
    std::vector<std::string> chains;
    if (ok && found) ok = d.Chains(&chains);
    for (size_t i = 0; ok && found && i < chains.size(); i++) ok = d.Rules(chains[i]);
    if (ok && found) ok = d.Sets(&sets);
    for (size_t i = 0; ok && found && i < sets.size(); i++) {
      if (std::find(skipElements.begin(), skipElements.end(), sets[i]) != skipElements.end()) continue;
      ok = d.Elements(sets[i]);
    }
    if (ok && found) ok = d.Flowtables();
    if (!ok) {
      // A set or chain deleted between two dumps: the generation check retries.
      if (d.err != ENOENT) {
        result->error = d.error;
        result->errorNumber = d.err;
        return;
      }
    }
    if (!Generation(sock, &after, &result->error, &result->errorNumber)) return;
    if (ok && before == after && !d.interrupted) {
      d.w.U8(0);
      result->found = found;
      result->bytes = std::move(d.w.out);
      return;
    }
  }
  result->error = "the ruleset kept changing while it was being read";
  result->errorNumber = EAGAIN;
}

}  // namespace knp
