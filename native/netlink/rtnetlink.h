// rtnetlink link monitoring without N-API: the socket, the RTM_GETLINK dump,
// RTM_NEWLINK / RTM_DELLINK parsing and the resync after an overrun.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct nlmsghdr;

namespace knp {

// One interface as rtnetlink describes it. Field meanings are the kernel's;
// turning them into a domain view (up, loopback, ...) is the caller's business.
struct LinkRecord {
  uint32_t index = 0;
  std::string name;
  uint32_t flags = 0;      // IFF_* from struct ifinfomsg
  std::string kind;        // IFLA_INFO_KIND ("veth", "bridge", ...); empty when the device has none
  uint32_t mtu = 0;        // IFLA_MTU, 0 when absent
  uint8_t operState = 0;   // IFLA_OPERSTATE (IF_OPER_*), 0 (unknown) when absent
  uint32_t master = 0;     // IFLA_MASTER (bridge/bond the device is enslaved to), 0 for none
};

struct LinkChange {
  bool removed = false;  // RTM_DELLINK; otherwise RTM_NEWLINK (creation or any change)
  LinkRecord link;
};

enum class ResyncReason : uint8_t {
  kNone,
  kInitial,      // the first complete dump
  kOverrun,      // the receive queue overflowed (ENOBUFS, or a truncated message): events were lost
  kInterrupted,  // the kernel flagged the dump as inconsistent (NLM_F_DUMP_INTR)
};

// What one drain of the socket produced. When resync != kNone, `snapshot` is the
// complete list of links and replaces everything known before; `changes` apply
// on top of it (or on top of the previous state when there is no snapshot).
struct LinkBatch {
  ResyncReason resync = ResyncReason::kNone;
  std::vector<LinkRecord> snapshot;
  std::vector<LinkChange> changes;

  bool Empty() const { return resync == ResyncReason::kNone && changes.empty(); }
};

// Appends `next` to `pending` as if both had been read in one batch: a snapshot
// in `next` supersedes everything pending (keeping "initial" if the pending
// one was the first), changes append in order.
void AppendBatch(LinkBatch* pending, LinkBatch&& next);

// Parses one RTM_NEWLINK / RTM_DELLINK message. Returns false for anything that
// is not a well-formed AF_UNSPEC link message: the bridge layer also sends
// AF_BRIDGE link messages to the same group (a DELLINK there means "left the
// bridge", not "deleted"), and those must not count.
bool ParseLinkMessage(const nlmsghdr* nlh, LinkRecord* out);

// A non-blocking NETLINK_ROUTE socket subscribed to RTMGRP_LINK. Single-threaded:
// the owner calls Drain() whenever fd() is readable (poll/epoll/uv_poll).
class RtnlLinkSocket {
 public:
  enum class DrainResult {
    kDrained,          // the socket has nothing more to read now
    kBudgetExhausted,  // stopped after maxReads reads; more may be waiting
    kFailed,           // unrecoverable socket error: *error / *errnoOut say which
  };

  // netnsPath: null or empty for the caller's own namespace. receiveBufferBytes:
  // 0 keeps the system default; otherwise SO_RCVBUFFORCE (needs CAP_NET_ADMIN),
  // falling back to SO_RCVBUF (capped by net.core.rmem_max). Returns null with
  // *error and *errnoOut set on failure.
  static std::unique_ptr<RtnlLinkSocket> Open(const char* netnsPath, int receiveBufferBytes, std::string* error,
                                              int* errnoOut);
  ~RtnlLinkSocket();
  RtnlLinkSocket(const RtnlLinkSocket&) = delete;
  RtnlLinkSocket& operator=(const RtnlLinkSocket&) = delete;

  // Changes when a stalled dump makes the socket be replaced: poll the current one.
  int fd() const { return fd_; }
  // The receive buffer the kernel actually granted (it doubles what was asked).
  // Readable from any thread, like the counters; Drain() runs on one.
  int receiveBufferBytes() const { return grantedBuffer_.load(std::memory_order_relaxed); }
  uint64_t overruns() const { return overruns_.load(std::memory_order_relaxed); }
  uint64_t dumps() const { return dumps_.load(std::memory_order_relaxed); }
  uint64_t stalledDumps() const { return stalledDumps_.load(std::memory_order_relaxed); }

  // Sends the first RTM_GETLINK dump request. Subscription happened in Open(),
  // so no change can fall between the dump and the event stream.
  bool Start(std::string* error, int* errnoOut);

  // Reads what is available (at most maxReads datagrams) and appends its
  // meaning to *out. Never blocks.
  DrainResult Drain(int maxReads, LinkBatch* out, std::string* error, int* errnoOut);

 private:
  RtnlLinkSocket(std::string netnsPath, int requestedBuffer);
  bool Connect(std::string* error, int* errnoOut);
  bool ReplaceStalledDump(std::string* error, int* errnoOut);
  bool RequestDump(ResyncReason reason, std::string* error, int* errnoOut);
  bool HandleMessage(const nlmsghdr* nlh, LinkBatch* out, std::string* error, int* errnoOut);
  bool OnOverrun(std::string* error, int* errnoOut);
  void WantDump(ResyncReason reason);
  bool FinishDump(LinkBatch* out, std::string* error, int* errnoOut);

  const std::string netnsPath_;
  const int requestedBuffer_;
  int fd_ = -1;
  uint32_t portId_ = 0;
  uint32_t seq_ = 0;
  uint32_t dumpSeq_ = 0;
  bool dumping_ = false;
  bool dumpSpoiled_ = false;  // an overrun or NLM_F_DUMP_INTR hit the running dump
  bool dumpWanted_ = false;   // a re-dump is due once the queue has been read empty
  ResyncReason wantedReason_ = ResyncReason::kNone;
  ResyncReason spoiledBy_ = ResyncReason::kNone;
  bool deliveredSnapshot_ = false;
  ResyncReason dumpReason_ = ResyncReason::kNone;
  std::vector<LinkRecord> dumpLinks_;
  // Events that arrived while a dump ran. Applied after the dump's snapshot they
  // give the current state whatever the interleaving: every change after the
  // subscription produced one of them, in order.
  std::vector<LinkChange> queued_;
  std::vector<char> buffer_;
  std::atomic<uint64_t> overruns_{0};
  std::atomic<uint64_t> dumps_{0};
  std::atomic<uint64_t> stalledDumps_{0};
  std::atomic<int> grantedBuffer_{0};
};

}  // namespace knp
