#include "commit-stream.h"

#include <chrono>
#include <utility>

#include "elapsed.h"

namespace knp {

CommitStream::CommitStream(std::string netnsPath, size_t expectedBytes)
    : netnsPath_(std::move(netnsPath)), expectedBytes_(expectedBytes) {
  thread_ = std::thread([this] { Run(); });
}

CommitStream::~CommitStream() {
  if (thread_.joinable()) Abort();
  pthread_cond_destroy(&wake_);
}

void CommitStream::Push(BatchBytes bytes, size_t size, bool pagesOwned) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({std::move(bytes), size, pagesOwned});
    pieces_++;
  }
  pthread_cond_signal(&wake_);
}

void CommitStream::Cut() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Piece cut;
    cut.cut = true;
    queue_.push_back(std::move(cut));
  }
  pthread_cond_signal(&wake_);
}

bool CommitStream::OpenTransaction() {
  // The socket first: its sequence numbers are in every message built.
  CommitResult opening;
  const bool opened = OpenCommitSocket(netnsPath_, &socket_, &opening);
  result_.openMs += opening.openMs;
  if (!opened) {
    result_.transportError = opening.transportError;
    result_.transportErrno = opening.transportErrno;
    return false;
  }
  builder_ = std::make_unique<TransactionBuilder>(&built_, socket_.baseSeq, expectedBytes_);
  return true;
}

void CommitStream::DropTransaction() {
  builder_.reset();
  CloseCommitSocket(&socket_);
}

bool CommitStream::SendTransaction() {
  builder_->Finish();
  if (!result_.failures.empty()) {
    DropTransaction();
    return false;
  }
  builder_.reset();
  CommitResult sent;
  SendBuilt(&socket_, built_, &sent);
  built_ = BuiltBatch{};
  result_.transactions++;
  result_.messages += sent.messages;
  result_.bytes += sent.bytes;
  result_.releasedBytes += sent.releasedBytes;
  result_.sendMs += sent.sendMs;
  result_.sendCpuMs += sent.sendCpuMs;
  result_.receiveMs += sent.receiveMs;
  result_.failures = std::move(sent.failures);
  result_.transportError = std::move(sent.transportError);
  result_.transportErrno = sent.transportErrno;
  return result_.failures.empty() && result_.transportError.empty();
}

void CommitStream::Run() {
  result_.transactions = 0;
  stopped_ = !OpenTransaction();
  for (;;) {
    Piece piece;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      while (!aborted_ && !ended_ && queue_.empty()) pthread_cond_wait(&wake_, mutex_.native_handle());
      if (aborted_) break;
      if (queue_.empty()) break;  // ended, and every piece built
      piece = std::move(queue_.front());
      queue_.pop_front();
    }
    // After a refusal nothing more is read: the transaction will not be sent.
    if (stopped_ || refused_) continue;
    if (piece.cut) {
      stopped_ = !SendTransaction() || !OpenTransaction();
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    Batch batch;
    if (!ParseBatch(std::move(piece.bytes), piece.size, &batch, &inputError_)) {
      refused_ = true;
      continue;
    }
    const auto parsed = std::chrono::steady_clock::now();
    const double cpu0 = ThreadCpuMs();
    parseMs_ += MsSince(t0);
    batch.pagesOwned = piece.pagesOwned;
    builder_->Add(batch, &result_.failures);
    result_.buildMs += MsSince(parsed);
    result_.buildCpuMs += ThreadCpuMs() - cpu0;
  }
}

void CommitStream::Stop(bool send) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (send) ended_ = true;
    else {
      aborted_ = true;
      queue_.clear();
    }
  }
  pthread_cond_signal(&wake_);
  thread_.join();
}

void CommitStream::Finish(CommitResult* result, bool* refused, InputError* inputError, double* parseMs) {
  const auto t0 = std::chrono::steady_clock::now();
  Stop(true);
  result_.waitMs = MsSince(t0);
  result_.pieces = pieces_;
  *refused = refused_;
  *parseMs = parseMs_;
  if (refused_) *inputError = inputError_;
  if (!stopped_) {
    if (refused_) DropTransaction();
    else SendTransaction();
  }
  built_ = BuiltBatch{};
  *result = std::move(result_);
}

void CommitStream::Abort() {
  Stop(false);
  DropTransaction();
}

}  // namespace knp
