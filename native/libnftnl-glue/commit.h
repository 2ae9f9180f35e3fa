// Sends one parsed batch as one nftables transaction and maps every error the
// kernel reports back to the operation that caused it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "batch.h"
#include "message-builder.h"
#include "netlink/socket-pool.h"

namespace knp {

struct CommitResult {
  // Set when the transaction could not be sent at all (socket, buffer size...).
  std::string transportError;
  int transportErrno = 0;
  std::vector<OperationFailure> failures;
  uint32_t messages = 0;
  size_t bytes = 0;
  // Bytes of the batch given back to the OS while the messages were built.
  size_t releasedBytes = 0;
  // Where the worker's time went: building messages, the kernel processing the
  // batch inside send(), and reading its answers back.
  double openMs = 0;  // opening the socket (in the target namespace)
  double buildMs = 0;
  double sendMs = 0;
  double receiveMs = 0;
  // CPU time of the worker thread in building and in send() (the kernel's
  // work): on a loaded machine the wall times above can be several times these.
  double buildCpuMs = 0;
  double sendCpuMs = 0;
  // A streamed commit (commit-stream.h): its pieces, and how long its end
  // waited for their building after the last was pushed (the rest of the
  // building overlapped the encoding of the pieces after).
  uint32_t pieces = 1;
  double waitMs = 0;
  // The transactions sent (a stream's cuts, commit-stream.h); 1 for one batch.
  uint32_t transactions = 1;
};

// A commit socket taken from the pool, and the sequence number its
// transaction's messages start from (they are built with it).
struct CommitSocket {
  std::unique_ptr<NetlinkSocket> sock;
  NamespaceId nsId;
  uint32_t baseSeq = 0;
};

// Takes a socket for netnsPath; false with the transport error in *result.
bool OpenCommitSocket(const std::string& netnsPath, CommitSocket* socket, CommitResult* result);
// Gives back a socket nothing was sent on.
void CloseCommitSocket(CommitSocket* socket);
// Sends messages built from socket->baseSeq as one transaction and reads
// every answer; the socket goes back to the pool, or is dropped on a
// transport error.
void SendBuilt(CommitSocket* socket, const BuiltBatch& builder, CommitResult* result);

// Builds one parsed batch's messages and sends them (the three above).
void CommitBatch(const Batch& batch, const std::string& netnsPath, CommitResult* result);

}  // namespace knp
