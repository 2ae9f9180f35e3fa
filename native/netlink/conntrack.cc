#include "conntrack.h"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "netlink-socket.h"

namespace knp::ct {
namespace {

// The kernel's CTA_FILTER_F_* bits (nf_conntrack_netlink.c; not in the uapi
// headers): which fields of the CTA_TUPLE_ORIG given with a dump must match.
constexpr uint32_t kFilterIpDst = 1u << 1;
constexpr uint32_t kFilterProtoNum = 1u << 3;
constexpr uint32_t kFilterProtoDstPort = 1u << 5;

// Upper bound of one delete or create message (two tuples, id, zone, timeout).
constexpr size_t kMaxMessage = 512;

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

nlmsghdr* PutHeader(char* buf, uint8_t type, uint16_t flags, uint32_t seq, uint8_t family) {
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | type;
  nlh->nlmsg_flags = NLM_F_REQUEST | flags;
  nlh->nlmsg_seq = seq;
  auto* nfg = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nfgenmsg)));
  nfg->nfgen_family = family;
  nfg->version = NFNETLINK_V0;
  nfg->res_id = 0;
  return nlh;
}

size_t AddressLength(uint8_t family) { return family == AF_INET6 ? 16 : 4; }

// Attribute tables indexed by type; a parse callback fills them.
struct Table {
  const nlattr** slots;
  uint16_t size;
};

int Collect(const nlattr* attr, void* data) {
  auto* t = static_cast<Table*>(data);
  uint16_t type = mnl_attr_get_type(attr);
  if (type < t->size) t->slots[type] = attr;
  return MNL_CB_OK;
}

template <size_t N>
bool ParseNested(const nlattr* nest, const nlattr* (&slots)[N]) {
  std::fill(std::begin(slots), std::end(slots), nullptr);
  Table t{slots, uint16_t(N)};
  return mnl_attr_parse_nested(nest, Collect, &t) >= 0;
}

struct Tuple {
  uint8_t protocol = 0;
  Address src{}, dst{};
  uint16_t dport = 0;
};

bool ReadAddress(const nlattr* a, size_t len, Address* out) {
  if (a == nullptr || mnl_attr_get_payload_len(a) != len) return false;
  out->fill(0);
  memcpy(out->data(), mnl_attr_get_payload(a), len);
  return true;
}

bool DecodeTuple(const nlattr* tuple, uint8_t family, Tuple* out) {
  const nlattr* tb[CTA_TUPLE_MAX + 1];
  if (tuple == nullptr || !ParseNested(tuple, tb) || !tb[CTA_TUPLE_IP] || !tb[CTA_TUPLE_PROTO]) return false;
  const nlattr* ip[CTA_IP_MAX + 1];
  const nlattr* proto[CTA_PROTO_MAX + 1];
  if (!ParseNested(tb[CTA_TUPLE_IP], ip) || !ParseNested(tb[CTA_TUPLE_PROTO], proto)) return false;
  size_t len = AddressLength(family);
  bool v6 = family == AF_INET6;
  if (!ReadAddress(ip[v6 ? CTA_IP_V6_SRC : CTA_IP_V4_SRC], len, &out->src)) return false;
  if (!ReadAddress(ip[v6 ? CTA_IP_V6_DST : CTA_IP_V4_DST], len, &out->dst)) return false;
  if (!proto[CTA_PROTO_NUM] || mnl_attr_get_payload_len(proto[CTA_PROTO_NUM]) != 1) return false;
  out->protocol = mnl_attr_get_u8(proto[CTA_PROTO_NUM]);
  const nlattr* dport = proto[CTA_PROTO_DST_PORT];
  out->dport = dport && mnl_attr_get_payload_len(dport) == 2 ? ntohs(mnl_attr_get_u16(dport)) : 0;
  return true;
}

void PutTuple(nlmsghdr* nlh, uint16_t type, uint8_t family, uint8_t protocol, const Address* src, const Address* dst,
              const uint16_t* sport, const uint16_t* dport) {
  bool v6 = family == AF_INET6;
  size_t len = AddressLength(family);
  nlattr* tuple = mnl_attr_nest_start(nlh, type);
  nlattr* ip = mnl_attr_nest_start(nlh, CTA_TUPLE_IP);
  if (src) mnl_attr_put(nlh, v6 ? CTA_IP_V6_SRC : CTA_IP_V4_SRC, len, src->data());
  if (dst) mnl_attr_put(nlh, v6 ? CTA_IP_V6_DST : CTA_IP_V4_DST, len, dst->data());
  mnl_attr_nest_end(nlh, ip);
  nlattr* proto = mnl_attr_nest_start(nlh, CTA_TUPLE_PROTO);
  mnl_attr_put_u8(nlh, CTA_PROTO_NUM, protocol);
  if (sport) mnl_attr_put_u16(nlh, CTA_PROTO_SRC_PORT, htons(*sport));
  if (dport) mnl_attr_put_u16(nlh, CTA_PROTO_DST_PORT, htons(*dport));
  mnl_attr_nest_end(nlh, proto);
  mnl_attr_nest_end(nlh, tuple);
}

// What a delete needs of a dumped entry: its original tuple as the kernel
// wrote it (type with flags, payload), its id and zone when it had them.
struct Doomed {
  uint16_t tupleType = 0;
  std::vector<uint8_t> tuple;
  bool hasId = false;
  uint32_t idBe = 0;
  std::vector<uint8_t> zone;  // CTA_ZONE payload, empty when absent
};

// Targets by what an entry's original destination can match.
class Matcher {
 public:
  explicit Matcher(const std::vector<Target>& targets) {
    for (size_t i = 0; i < targets.size(); i++) {
      const Target& t = targets[i];
      if (t.anyAddress) byPort_[PortKey(t.protocol, t.port)].push_back(i);
      else byAddress_[AddressKey(t.protocol, t.address, t.port)].push_back(i);
      sortedKeep_.push_back(t.keep);
      std::sort(sortedKeep_.back().begin(), sortedKeep_.back().end());
    }
  }

  // True when a target covers the entry and its reply source is not one it allows.
  bool Stale(const Tuple& orig, const Address& replySrc) const {
    if (auto it = byAddress_.find(AddressKey(orig.protocol, orig.dst, orig.dport)); it != byAddress_.end())
      for (size_t i : it->second)
        if (!Allowed(i, replySrc)) return true;
    if (auto it = byPort_.find(PortKey(orig.protocol, orig.dport)); it != byPort_.end())
      for (size_t i : it->second)
        if (!Allowed(i, replySrc)) return true;
    return false;
  }

 private:
  static uint32_t PortKey(uint8_t protocol, uint16_t port) { return (uint32_t(protocol) << 16) | port; }
  static std::string AddressKey(uint8_t protocol, const Address& a, uint16_t port) {
    std::string k(19, '\0');
    k[0] = char(protocol);
    memcpy(k.data() + 1, a.data(), 16);
    k[17] = char(port >> 8);
    k[18] = char(port);
    return k;
  }
  bool Allowed(size_t i, const Address& a) const {
    return std::binary_search(sortedKeep_[i].begin(), sortedKeep_[i].end(), a);
  }

  std::unordered_map<std::string, std::vector<size_t>> byAddress_;
  std::unordered_map<uint32_t, std::vector<size_t>> byPort_;
  std::vector<std::vector<Address>> sortedKeep_;
};

void NoteError(CleanResult* r, const std::string& what, int errnum) {
  if (!r->error.empty()) return;
  r->error = what;
  r->errnum = errnum;
}

// One dump (filtered by `target` when given); stale entries are appended to doomed.
// Returns 0 or the errno the dump failed with (noted in result unless the
// filter itself was refused: the caller then dumps unfiltered).
int Dump(NetlinkSocket& sock, uint8_t family, const Target* target, const Matcher& matcher,
          std::unordered_set<uint32_t>& seenIds, std::vector<Doomed>& doomed, CleanResult* result) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = PutHeader(buf.data(), IPCTNL_MSG_CT_GET, NLM_F_DUMP, sock.NextSeq(), family);
  if (target) {
    uint32_t flags = kFilterProtoNum | kFilterProtoDstPort;
    // IPv6 address filters are inverted in the kernel (ctnetlink_filter_match_tuple
    // tests !ipv6_addr_cmp, and still did in 6.18: the dump then returns every
    // entry but the ones asked for), so IPv6 is filtered on protocol and port
    // only and the address is matched here.
    bool byAddress = !target->anyAddress && family == AF_INET;
    if (byAddress) flags |= kFilterIpDst;
    PutTuple(nlh, CTA_TUPLE_ORIG, family, target->protocol, nullptr, byAddress ? &target->address : nullptr, nullptr,
             &target->port);
    nlattr* filter = mnl_attr_nest_start(nlh, CTA_FILTER);
    mnl_attr_put_u32(nlh, CTA_FILTER_ORIG_FLAGS, flags);
    mnl_attr_put_u32(nlh, CTA_FILTER_REPLY_FLAGS, 0);
    mnl_attr_nest_end(nlh, filter);
  }
  result->dumps++;
  bool interrupted = false;
  std::string error;
  int rc = sock.Request(
      nlh,
      [&](const nlmsghdr* m) {
        const nlattr* tb[CTA_MAX + 1] = {};
        Table t{tb, uint16_t(CTA_MAX + 1)};
        if (mnl_attr_parse(m, sizeof(nfgenmsg), Collect, &t) < 0) return;
        result->scanned++;
        Tuple orig, reply;
        if (!DecodeTuple(tb[CTA_TUPLE_ORIG], family, &orig) || !DecodeTuple(tb[CTA_TUPLE_REPLY], family, &reply)) return;
        if (!matcher.Stale(orig, reply.src)) return;
        Doomed d;
        d.tupleType = tb[CTA_TUPLE_ORIG]->nla_type;
        const auto* p = static_cast<const uint8_t*>(mnl_attr_get_payload(tb[CTA_TUPLE_ORIG]));
        d.tuple.assign(p, p + mnl_attr_get_payload_len(tb[CTA_TUPLE_ORIG]));
        if (tb[CTA_ID] && mnl_attr_get_payload_len(tb[CTA_ID]) == 4) {
          d.hasId = true;
          d.idBe = mnl_attr_get_u32(tb[CTA_ID]);
          // Targeted dumps can return one entry twice (a NodePort and a Service IP target).
          if (!seenIds.insert(d.idBe).second) return;
        }
        if (tb[CTA_ZONE] && mnl_attr_get_payload_len(tb[CTA_ZONE]) == 2) {
          const auto* z = static_cast<const uint8_t*>(mnl_attr_get_payload(tb[CTA_ZONE]));
          d.zone.assign(z, z + 2);
        }
        result->stale++;
        doomed.push_back(std::move(d));
      },
      &interrupted, &error);
  bool filterRefused = target != nullptr && (rc == EOPNOTSUPP || rc == EINVAL);
  if (rc != 0 && !filterRefused) NoteError(result, "conntrack dump: " + error, rc);
  return rc;
}

// Sends the `count` requests laid out in buf (sequence numbers first..first+count-1)
// in one send() and reads an ack for each; onAck(index, errno).
int SendBatch(NetlinkSocket& sock, const std::vector<char>& buf, size_t bytes, uint32_t first, uint32_t count,
              const std::function<void(uint32_t, int)>& onAck, std::string* error) {
  if (send(sock.fd(), buf.data(), bytes, 0) < 0) {
    *error = std::string("send: ") + strerror(errno);
    return errno;
  }
  std::vector<char> in(1 << 16);
  uint32_t acked = 0;
  while (acked < count) {
    ssize_t n = recv(sock.fd(), in.data(), in.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = std::string("recv: ") + strerror(errno);
      return errno;
    }
    int len = int(n);
    for (auto* m = reinterpret_cast<const nlmsghdr*>(in.data()); mnl_nlmsg_ok(m, len); m = mnl_nlmsg_next(m, &len)) {
      if (m->nlmsg_type != NLMSG_ERROR) continue;
      uint32_t index = m->nlmsg_seq - first;
      if (index >= count) continue;  // not one of ours
      const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(m));
      onAck(index, -err->error);
      acked++;
    }
  }
  return 0;
}

// Writes `total` requests `batchSize` at a time (put(i, at, seq) lays request i
// out at `at` with sequence number seq and returns it) and sends each batch with
// SendBatch, onAck(errno) per answer. A send or receive error ends it: returned,
// with the requests of that batch in *unanswered (the socket's state is unknown).
int SendInBatches(NetlinkSocket& sock, size_t total, uint32_t batchSize,
                  const std::function<nlmsghdr*(size_t, char*, uint32_t)>& put, const std::function<void(int)>& onAck,
                  uint32_t* batches, uint32_t* unanswered, std::string* error) {
  batchSize = std::max<uint32_t>(1, batchSize);
  std::vector<char> buf(size_t(batchSize) * kMaxMessage);
  for (size_t start = 0; start < total; start += batchSize) {
    uint32_t count = uint32_t(std::min<size_t>(batchSize, total - start));
    uint32_t first = sock.NextSeq();
    for (uint32_t i = 1; i < count; i++) sock.NextSeq();
    size_t off = 0;
    for (uint32_t i = 0; i < count; i++) off += MNL_ALIGN(put(start + i, buf.data() + off, first + i)->nlmsg_len);
    (*batches)++;
    int rc = SendBatch(sock, buf, off, first, count, [&](uint32_t, int e) { onAck(e); }, error);
    if (rc != 0) {
      *unanswered = count;
      return rc;
    }
  }
  return 0;
}

void DeleteAll(NetlinkSocket& sock, uint8_t family, const std::vector<Doomed>& doomed, uint32_t batchSize,
               CleanResult* result) {
  std::string error;
  uint32_t unanswered = 0;
  int rc = SendInBatches(
      sock, doomed.size(), batchSize,
      [&](size_t i, char* at, uint32_t seq) {
        const Doomed& d = doomed[i];
        nlmsghdr* nlh = PutHeader(at, IPCTNL_MSG_CT_DELETE, NLM_F_ACK, seq, family);
        // Never without the tuple: a delete without one flushes the whole table.
        mnl_attr_put(nlh, d.tupleType, d.tuple.size(), d.tuple.data());
        if (d.hasId) mnl_attr_put_u32(nlh, CTA_ID, d.idBe);
        if (!d.zone.empty()) mnl_attr_put(nlh, CTA_ZONE, d.zone.size(), d.zone.data());
        return nlh;
      },
      [&](int e) {
        if (e == 0) result->deleted++;
        else if (e == ENOENT) result->vanished++;
        else {
          result->failed++;
          NoteError(result, std::string("conntrack delete: ") + strerror(e), e);
        }
      },
      &result->batches, &unanswered, &error);
  if (rc != 0) {
    result->failed += unanswered;
    NoteError(result, "conntrack delete: " + error, rc);
  }
}

}  // namespace

void Clean(const std::string& netnsPath, const CleanRequest& request, CleanResult* result) {
  NetlinkSocket sock;
  std::string error;
  if (!sock.Open(netnsPath, &error)) {
    NoteError(result, error, errno ? errno : EIO);
    return;
  }
  sock.SizeBuffers(size_t(1) << 20, size_t(4) << 20);
  Matcher matcher(request.targets);
  std::unordered_set<uint32_t> seenIds;
  std::vector<Doomed> doomed;
  auto t0 = std::chrono::steady_clock::now();
  if (request.full) {
    if (!request.targets.empty()) Dump(sock, request.family, nullptr, matcher, seenIds, doomed, result);
  } else {
    for (const Target& t : request.targets) {
      int rc = Dump(sock, request.family, &t, matcher, seenIds, doomed, result);
      if (rc == EOPNOTSUPP || rc == EINVAL) {
        // A kernel that refuses the dump filter: one unfiltered dump serves every target.
        Dump(sock, request.family, nullptr, matcher, seenIds, doomed, result);
        break;
      }
    }
  }
  result->dumpMs = MsSince(t0);
  auto t1 = std::chrono::steady_clock::now();
  DeleteAll(sock, request.family, doomed, std::max<uint32_t>(1, request.batchSize), result);
  result->deleteMs = MsSince(t1);
}

void Create(const std::string& netnsPath, uint8_t family, const std::vector<NewEntry>& entries, uint32_t batchSize,
            CreateResult* result) {
  NetlinkSocket sock;
  std::string error;
  if (!sock.Open(netnsPath, &error)) {
    result->error = error;
    result->errnum = EIO;
    return;
  }
  sock.SizeBuffers(size_t(4) << 20, size_t(4) << 20);
  uint32_t batches = 0;
  uint32_t unanswered = 0;
  int rc = SendInBatches(
      sock, entries.size(), batchSize,
      [&](size_t i, char* at, uint32_t seq) {
        const NewEntry& e = entries[i];
        nlmsghdr* nlh = PutHeader(at, IPCTNL_MSG_CT_NEW, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq, family);
        PutTuple(nlh, CTA_TUPLE_ORIG, family, e.protocol, &e.origSrc, &e.origDst, &e.origSport, &e.origDport);
        PutTuple(nlh, CTA_TUPLE_REPLY, family, e.protocol, &e.replySrc, &e.replyDst, &e.replySport, &e.replyDport);
        mnl_attr_put_u32(nlh, CTA_TIMEOUT, htonl(e.timeoutSec));
        return nlh;
      },
      [&](int err) {
        if (err == 0) result->created++;
        else {
          result->failed++;
          if (result->error.empty()) {
            result->error = std::string("conntrack create: ") + strerror(err);
            result->errnum = err;
          }
        }
      },
      &batches, &unanswered, &error);
  if (rc != 0) {
    result->error = "conntrack create: " + error;
    result->errnum = rc;
  }
}

}  // namespace knp::ct
