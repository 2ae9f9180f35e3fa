#include "rtnetlink.h"

#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <utility>

#include "netns-socket.h"

namespace knp {

namespace {

// Large enough for any dump skb (the kernel caps those at 32 KiB) and for
// ordinary notifications; a bigger one (e.g. a NIC with many VFs) arrives
// truncated, grows the buffer and counts as an overrun.
constexpr size_t kInitialBuffer = 64 * 1024;
constexpr size_t kMaxBuffer = 1024 * 1024;

void SetErrno(int err, const char* what, std::string* error, int* errnoOut) {
  *errnoOut = err;
  *error = std::string(what) + ": " + strerror(err);
}

struct LinkAttrs {
  const nlattr* tb[IFLA_MAX + 1] = {};
};

int CollectLinkAttr(const nlattr* attr, void* data) {
  auto* attrs = static_cast<LinkAttrs*>(data);
  int type = mnl_attr_get_type(attr);
  // Unknown (newer) attributes are skipped, never an error.
  if (type < 0 || type > IFLA_MAX) return MNL_CB_OK;
  attrs->tb[type] = attr;
  return MNL_CB_OK;
}

int FindInfoKind(const nlattr* attr, void* data) {
  if (mnl_attr_get_type(attr) == IFLA_INFO_KIND) *static_cast<const nlattr**>(data) = attr;
  return MNL_CB_OK;
}

}  // namespace

void AppendBatch(LinkBatch* pending, LinkBatch&& next) {
  if (next.resync != ResyncReason::kNone) {
    ResyncReason first = pending->resync == ResyncReason::kInitial ? ResyncReason::kInitial : next.resync;
    *pending = std::move(next);
    pending->resync = first;
    return;
  }
  if (pending->changes.empty()) {
    pending->changes = std::move(next.changes);
    return;
  }
  pending->changes.insert(pending->changes.end(), std::make_move_iterator(next.changes.begin()),
                          std::make_move_iterator(next.changes.end()));
}

bool ParseLinkMessage(const nlmsghdr* nlh, LinkRecord* out) {
  if (nlh->nlmsg_type != RTM_NEWLINK && nlh->nlmsg_type != RTM_DELLINK) return false;
  if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(ifinfomsg))) return false;
  const auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(nlh));
  if (ifi->ifi_family != AF_UNSPEC || ifi->ifi_index <= 0) return false;

  LinkAttrs attrs;
  if (mnl_attr_parse(nlh, sizeof(ifinfomsg), CollectLinkAttr, &attrs) != MNL_CB_OK) return false;

  const nlattr* name = attrs.tb[IFLA_IFNAME];
  if (name == nullptr || mnl_attr_validate(name, MNL_TYPE_NUL_STRING) < 0) return false;

  LinkRecord rec;
  rec.index = static_cast<uint32_t>(ifi->ifi_index);
  rec.flags = ifi->ifi_flags;
  rec.name = mnl_attr_get_str(name);
  if (const nlattr* a = attrs.tb[IFLA_MTU]; a && mnl_attr_validate(a, MNL_TYPE_U32) >= 0) rec.mtu = mnl_attr_get_u32(a);
  if (const nlattr* a = attrs.tb[IFLA_OPERSTATE]; a && mnl_attr_validate(a, MNL_TYPE_U8) >= 0)
    rec.operState = mnl_attr_get_u8(a);
  if (const nlattr* a = attrs.tb[IFLA_MASTER]; a && mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
    rec.master = mnl_attr_get_u32(a);
  if (const nlattr* info = attrs.tb[IFLA_LINKINFO]; info && mnl_attr_validate(info, MNL_TYPE_NESTED) >= 0) {
    const nlattr* kind = nullptr;
    if (mnl_attr_parse_nested(info, FindInfoKind, &kind) == MNL_CB_OK && kind != nullptr &&
        mnl_attr_validate(kind, MNL_TYPE_STRING) >= 0) {
      // IFLA_INFO_KIND is NUL-terminated in practice, but the length is the authority.
      const char* s = mnl_attr_get_str(kind);
      rec.kind.assign(s, strnlen(s, mnl_attr_get_payload_len(kind)));
    }
  }
  *out = std::move(rec);
  return true;
}

std::unique_ptr<RtnlLinkSocket> RtnlLinkSocket::Open(const char* netnsPath, int receiveBufferBytes,
                                                     std::string* error, int* errnoOut) {
  *errnoOut = 0;
  std::unique_ptr<RtnlLinkSocket> socket(new RtnlLinkSocket(netnsPath ? netnsPath : "", receiveBufferBytes));
  if (!socket->Connect(error, errnoOut)) return nullptr;
  return socket;
}

RtnlLinkSocket::RtnlLinkSocket(std::string netnsPath, int requestedBuffer)
    : netnsPath_(std::move(netnsPath)), requestedBuffer_(requestedBuffer), buffer_(kInitialBuffer) {}

RtnlLinkSocket::~RtnlLinkSocket() {
  if (fd_ >= 0) close(fd_);
}

// Opens a socket subscribed to link events and makes it this object's, closing
// the one before (which ends whatever dump the kernel still ran for it).
bool RtnlLinkSocket::Connect(std::string* error, int* errnoOut) {
  int fd = OpenSocketInNetns(netnsPath_.empty() ? nullptr : netnsPath_.c_str(), AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK,
                             NETLINK_ROUTE, error, errnoOut);
  if (fd < 0) return false;
  auto fail = [&](const char* what) {
    SetErrno(errno, what, error, errnoOut);
    close(fd);
    return false;
  };
  if (requestedBuffer_ > 0 &&
      setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &requestedBuffer_, sizeof requestedBuffer_) != 0 &&
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &requestedBuffer_, sizeof requestedBuffer_) != 0)
    return fail("setsockopt SO_RCVBUF");
  // Overruns must be reported (ENOBUFS) so that a resync follows; this is the default,
  // set explicitly so that a changed system default cannot silence them.
  int zero = 0;
  setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &zero, sizeof zero);

  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  addr.nl_groups = RTMGRP_LINK;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return fail("bind rtnetlink");
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return fail("getsockname rtnetlink");
  int granted = 0;
  socklen_t grantedLen = sizeof granted;
  if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &granted, &grantedLen) != 0) granted = -1;

  if (fd_ >= 0) close(fd_);
  fd_ = fd;
  portId_ = addr.nl_pid;
  grantedBuffer_.store(granted, std::memory_order_relaxed);
  return true;
}

// The kernel produces a dump's next part only inside a read that dequeued
// something. A part that found the queue full was dropped (the read saw
// ENOBUFS), and with the queue read empty nothing resumes the dump until some
// unrelated link event arrives, which may be never. Nor can it be restarted
// on this socket (EBUSY while it runs). A fresh socket, subscribed before its
// own dump, takes over.
bool RtnlLinkSocket::ReplaceStalledDump(std::string* error, int* errnoOut) {
  stalledDumps_.fetch_add(1, std::memory_order_relaxed);
  ResyncReason reason = spoiledBy_ != ResyncReason::kNone ? spoiledBy_ : ResyncReason::kOverrun;
  dumping_ = false;
  if (!Connect(error, errnoOut)) return false;
  return RequestDump(reason, error, errnoOut);
}

bool RtnlLinkSocket::Start(std::string* error, int* errnoOut) {
  return RequestDump(ResyncReason::kInitial, error, errnoOut);
}

bool RtnlLinkSocket::RequestDump(ResyncReason reason, std::string* error, int* errnoOut) {
  alignas(nlmsghdr) char buf[NLMSG_SPACE(sizeof(ifinfomsg)) + 64] = {};
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETLINK;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  // Sequence 0 is what notifications often carry; never use it for our dump.
  if (++seq_ == 0) ++seq_;
  nlh->nlmsg_seq = seq_;
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  // Statistics are most of a link message and we never read them.
  mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);

  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  ssize_t sent;
  do {
    sent = sendto(fd_, nlh, nlh->nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    SetErrno(errno, "send RTM_GETLINK dump", error, errnoOut);
    return false;
  }
  dumpSeq_ = seq_;
  dumping_ = true;
  dumpSpoiled_ = false;
  spoiledBy_ = ResyncReason::kNone;
  dumpReason_ = deliveredSnapshot_ ? reason : ResyncReason::kInitial;
  dumpLinks_.clear();
  queued_.clear();
  dumps_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool RtnlLinkSocket::OnOverrun(std::string* error, int* errnoOut) {
  overruns_.fetch_add(1, std::memory_order_relaxed);
  if (dumping_) {
    // A dump cannot be restarted while the kernel still runs it (EBUSY); let it
    // finish, throw its result away, and dump again.
    dumpSpoiled_ = true;
    spoiledBy_ = ResyncReason::kOverrun;
    return true;
  }
  WantDump(ResyncReason::kOverrun);
  return true;
}

// The dump is requested only once the receive queue has been read empty. After
// an overrun the kernel marks the socket congested and drops every further
// notification *silently* until the queue is empty again; a dump started
// earlier could finish before a change that is then lost without a trace.
void RtnlLinkSocket::WantDump(ResyncReason reason) {
  dumpWanted_ = true;
  wantedReason_ = reason;
  queued_.clear();
}

bool RtnlLinkSocket::FinishDump(LinkBatch* out, std::string* error, int* errnoOut) {
  dumping_ = false;
  if (dumpSpoiled_) {
    WantDump(spoiledBy_);
    return true;
  }
  // The snapshot supersedes whatever changes this batch collected before it.
  out->resync = dumpReason_;
  out->snapshot = std::move(dumpLinks_);
  out->changes = std::move(queued_);
  dumpLinks_.clear();
  queued_.clear();
  deliveredSnapshot_ = true;
  return true;
}

bool RtnlLinkSocket::HandleMessage(const nlmsghdr* nlh, LinkBatch* out, std::string* error, int* errnoOut) {
  bool ofDump = dumping_ && nlh->nlmsg_pid == portId_ && nlh->nlmsg_seq == dumpSeq_;
  if (ofDump) {
    if (nlh->nlmsg_flags & NLM_F_DUMP_INTR) {
      dumpSpoiled_ = true;
      if (spoiledBy_ == ResyncReason::kNone) spoiledBy_ = ResyncReason::kInterrupted;
    }
    switch (nlh->nlmsg_type) {
      case NLMSG_DONE:
        return FinishDump(out, error, errnoOut);
      case NLMSG_ERROR: {
        const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
        if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(nlmsgerr)) || err->error == 0) return true;
        // The dump's first part found the queue full: an overrun like any other.
        if (err->error == -ENOBUFS) return OnOverrun(error, errnoOut);
        SetErrno(-err->error, "RTM_GETLINK dump", error, errnoOut);
        return false;
      }
      case RTM_NEWLINK: {
        LinkRecord rec;
        if (ParseLinkMessage(nlh, &rec)) dumpLinks_.push_back(std::move(rec));
        return true;
      }
      default:
        return true;
    }
  }
  if (nlh->nlmsg_type != RTM_NEWLINK && nlh->nlmsg_type != RTM_DELLINK) return true;
  // Older than the dump about to be requested, which will cover it.
  if (dumpWanted_) return true;
  LinkChange change;
  if (!ParseLinkMessage(nlh, &change.link)) return true;
  change.removed = nlh->nlmsg_type == RTM_DELLINK;
  (dumping_ ? queued_ : out->changes).push_back(std::move(change));
  return true;
}

RtnlLinkSocket::DrainResult RtnlLinkSocket::Drain(int maxReads, LinkBatch* out, std::string* error,
                                                  int* errnoOut) {
  for (int reads = 0; reads < maxReads; ++reads) {
    sockaddr_nl from{};
    iovec iov{buffer_.data(), buffer_.size()};
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof from;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    ssize_t n = recvmsg(fd_, &msg, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        // Read empty while a dump runs: the dump is stalled (see ReplaceStalledDump).
        if (dumping_) {
          if (!ReplaceStalledDump(error, errnoOut)) return DrainResult::kFailed;
          continue;
        }
        if (!dumpWanted_) return DrainResult::kDrained;
        dumpWanted_ = false;
        if (!RequestDump(wantedReason_, error, errnoOut)) return DrainResult::kFailed;
        continue;
      }
      if (errno == ENOBUFS) {
        if (!OnOverrun(error, errnoOut)) return DrainResult::kFailed;
        continue;
      }
      SetErrno(errno, "recvmsg rtnetlink", error, errnoOut);
      return DrainResult::kFailed;
    }
    if (msg.msg_flags & MSG_TRUNC) {
      // Part of a message is lost: as bad as a dropped one.
      if (buffer_.size() < kMaxBuffer) buffer_.resize(buffer_.size() * 2);
      if (!OnOverrun(error, errnoOut)) return DrainResult::kFailed;
      continue;
    }
    // Only the kernel speaks rtnetlink to us; another process could unicast to our port.
    if (from.nl_pid != 0) continue;
    int len = static_cast<int>(n);
    for (auto* nlh = reinterpret_cast<const nlmsghdr*>(buffer_.data()); mnl_nlmsg_ok(nlh, len);
         nlh = mnl_nlmsg_next(nlh, &len)) {
      if (!HandleMessage(nlh, out, error, errnoOut)) return DrainResult::kFailed;
    }
  }
  return DrainResult::kBudgetExhausted;
}

}  // namespace knp
