// Conntrack cleanup over ctnetlink (NETLINK_NETFILTER, subsystem CTNETLINK),
// with libmnl only: no libnetfilter_conntrack, no conntrack process.
//
// The caller (JS) decides which entries are stale: it hands over targets,
// each "an original destination (protocol, address or any address, port)
// whose reply source must be one of these addresses". This code dumps the
// entries that can match, keeps those whose reply source is not allowed, and
// deletes them by their original tuple and conntrack id, in batches of a size
// the caller chose. Nothing here decides policy: a target for TCP would be
// honoured, so the JS side refuses to build one.
//
// Dumps: in targeted mode one dump per target, filtered by the kernel on the
// original tuple (CTA_FILTER, Linux 5.9+; an older kernel that ignores the
// filter answers with every entry, which the match below then narrows, and
// one that refuses it gets one unfiltered dump for all targets: the result is
// the same, only slower). In full mode one unfiltered dump of the family.
// Every entry a dump returns is matched here again either way.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace knp::ct {

using Address = std::array<uint8_t, 16>;  // IPv4 in the first 4 bytes

struct Target {
  uint8_t protocol = 0;   // IPPROTO_UDP / IPPROTO_SCTP (the caller's choice)
  bool anyAddress = false;  // a NodePort: every original destination address
  Address address{};
  uint16_t port = 0;  // host byte order
  std::vector<Address> keep;  // allowed reply sources (the serving endpoints)
};

struct CleanRequest {
  uint8_t family = 0;  // AF_INET / AF_INET6
  bool full = false;
  uint32_t batchSize = 0;  // delete messages per send(), >= 1
  std::vector<Target> targets;
};

struct CleanResult {
  uint64_t scanned = 0;   // entries the dumps returned
  uint64_t stale = 0;     // of them, entries a target says must go
  uint64_t deleted = 0;
  uint64_t vanished = 0;  // gone (or replaced) before the delete reached them: ENOENT
  uint64_t failed = 0;    // deletes the kernel refused otherwise
  uint32_t dumps = 0;
  uint32_t batches = 0;
  // The first error (a failed dump, a failed delete, a transport error).
  std::string error;
  int errnum = 0;
  double dumpMs = 0;
  double deleteMs = 0;
};

// Dumps, matches and deletes in the network namespace at netnsPath ("" = own).
void Clean(const std::string& netnsPath, const CleanRequest& request, CleanResult* result);

// One entry to create (benchmarks and tests: a table of a given size without traffic).
struct NewEntry {
  uint8_t protocol = 0;
  Address origSrc{}, origDst{}, replySrc{}, replyDst{};
  uint16_t origSport = 0, origDport = 0, replySport = 0, replyDport = 0;
  uint32_t timeoutSec = 0;
};

struct CreateResult {
  uint64_t created = 0;
  uint64_t failed = 0;
  std::string error;
  int errnum = 0;
};

void Create(const std::string& netnsPath, uint8_t family, const std::vector<NewEntry>& entries, uint32_t batchSize,
            CreateResult* result);

}  // namespace knp::ct
