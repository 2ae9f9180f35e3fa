// Netlink messages of one transaction, built from a checked batch through
// libnftnl: batch begin, one message per record (element lists split into
// several), batch end, all in one send buffer for one send().
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "batch.h"

namespace knp {

// A growable send buffer that is never zero-filled: libnftnl and libmnl
// write every byte of a message, padding included.
class SendBuffer {
 public:
  // Starts empty with room for `capacity` bytes.
  void Reset(size_t capacity) {
    data_.reset(new char[capacity]);
    capacity_ = capacity;
    used_ = 0;
  }
  // Room for n more bytes; messages already written stay where they are by offset.
  void Ensure(size_t n) {
    if (used_ + n <= capacity_) return;
    size_t next = std::max(capacity_ * 2, used_ + n);
    std::unique_ptr<char[]> grown(new char[next]);
    memcpy(grown.get(), data_.get(), used_);
    data_ = std::move(grown);
    capacity_ = next;
  }
  char* Tail() { return data_.get() + used_; }
  void Advance(size_t n) { used_ += n; }
  const char* data() const { return data_.get(); }
  size_t size() const { return used_; }

 private:
  std::unique_ptr<char[]> data_;
  size_t capacity_ = 0;
  size_t used_ = 0;
};

// Where a failure was found: by the kernel (errno from its answer), or while
// building the messages (libnftnl refused a value, a message outgrew
// netlink's 16-bit lengths), in which case nothing was sent.
enum class FailureOrigin { Kernel, Builder };

struct OperationFailure {
  // Index into the caller's operation list; -1 when no operation can be named.
  int64_t index;
  int error;  // positive errno
  std::string message;
  FailureOrigin origin = FailureOrigin::Kernel;
};

struct MessageInfo {
  uint32_t opIndex;       // the record's operation (for elements, the set's: see elementOps)
  bool elements;          // an element message
  uint32_t firstElement;  // index in BuiltBatch::elementOps of the message's first element
  uint32_t elemCount;     // elements in the message
  size_t offset;          // of its nlmsghdr in the send buffer
};

struct BuiltBatch {
  SendBuffer buffer;
  std::vector<MessageInfo> messages;  // messages[i] has sequence number baseSeq + 1 + i
  // The operation of each element sent, in message order: the kernel's
  // answers are mapped to operations without the batch's bytes, which a
  // batch in pages of its own no longer has once built.
  std::vector<uint32_t> elementOps;
  // Bytes of the batch given back to the OS while the messages were built.
  size_t releasedBytes = 0;
};

// At most this many elements go into one NEWSETELEM/DELSETELEM message.
constexpr uint32_t kElementsPerMessage = 500;

class BatchBuilder;

// One transaction's messages built from one checked batch or from several in
// turn (a streamed commit's pieces, each checked as it came): batch begin,
// each batch's messages as BuildMessages makes them, batch end. Failures
// accumulate; with any, the transaction must not be sent.
class TransactionBuilder {
 public:
  // `expectedBytes`: the send buffer's first size (it grows as needed).
  TransactionBuilder(BuiltBatch* out, uint32_t baseSeq, size_t expectedBytes);
  ~TransactionBuilder();
  TransactionBuilder(const TransactionBuilder&) = delete;
  TransactionBuilder& operator=(const TransactionBuilder&) = delete;
  void Add(const Batch& batch, std::vector<OperationFailure>* failures);
  // Ends the transaction; nothing is added after.
  void Finish();

 private:
  std::unique_ptr<BatchBuilder> builder_;
};

// Builds every message. A batch whose pages are its own (Batch::pagesOwned)
// is given back to the OS as it is read: the messages take about as much
// memory again, and a full sync's batch is tens to hundreds of MiB, so the
// two are never both resident. A record that libnftnl refuses, or whose message
// would not fit netlink's 16-bit attribute lengths, adds a failure naming its
// operation (an element's own), and the rest are still built so that every
// such failure is reported at once; the batch must then not be sent.
void BuildMessages(const Batch& batch, uint32_t baseSeq, BuiltBatch* out, std::vector<OperationFailure>* failures);

// The operation of the element that the kernel's error offset points into in
// element message m, or -1.
int64_t ElementAtOffset(const BuiltBatch& built, const MessageInfo& m, uint32_t offset);

}  // namespace knp
