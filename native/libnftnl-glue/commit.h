// Sends one parsed batch as one nftables transaction and maps every error the
// kernel reports back to the operation that caused it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "batch.h"
#include "message-builder.h"

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
};

void CommitBatch(const Batch& batch, const std::string& netnsPath, CommitResult* result);

}  // namespace knp
