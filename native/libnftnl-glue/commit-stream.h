// One transaction committed from several pieces, each a complete batch of its
// own (its operations numbered within the whole transaction): each is checked
// and its messages built on the stream's thread while JS encodes the next, and
// the transaction is sent, as one, once the last is built. A full sync's batch
// at 100k Services takes the addon 1.5 s to check and build; streamed, that
// time overlaps the encoding instead of following it.
//
// Or several transactions in turn (Cut()), where the caller knows that the
// operations before a cut may land before the rest (src/nft/transaction.ts,
// stageable): the stream's thread sends each as soon as it is built, while
// JS still encodes, so that the kernel's time overlaps the encoding too. The
// thread does one thing at a time, so each lands before the next is sent; a
// transaction the kernel refuses ends the sending.
#pragma once

#include <pthread.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "batch.h"
#include "commit.h"
#include "message-builder.h"

namespace knp {

class CommitStream {
 public:
  // `expectedBytes`: the netlink messages' size foreseen (the send buffer's first size).
  CommitStream(std::string netnsPath, size_t expectedBytes);
  // Aborts a stream neither finished nor aborted.
  ~CommitStream();
  CommitStream(const CommitStream&) = delete;
  CommitStream& operator=(const CommitStream&) = delete;

  // Queues a piece; the stream owns its bytes from here. `pagesOwned`: see Batch.
  void Push(BatchBytes bytes, size_t size, bool pagesOwned);

  // Ends a transaction after the pieces pushed so far: sent once they are built.
  void Cut();

  // Blocks until every piece is checked and built (and the transactions cut
  // before them sent), then sends the last transaction unless a piece was
  // refused (*refused, *inputError: the first refusal), libnftnl or the
  // kernel refused an operation (result->failures) or sending failed. Once.
  void Finish(CommitResult* result, bool* refused, InputError* inputError, double* parseMs);

  // Drops what is queued and sends nothing more. Blocks for the piece being
  // built, or the transaction being sent.
  void Abort();

 private:
  struct Piece {
    BatchBytes bytes;
    size_t size = 0;
    bool pagesOwned = false;
    bool cut = false;
  };
  void Run();
  void Stop(bool send);
  // Sends the transaction built so far; false (nothing more to be sent) when it failed.
  bool SendTransaction();
  // Starts the next transaction on a socket of its own; false when none could be had.
  bool OpenTransaction();
  // Sends nothing of the transaction being built, and gives its socket back (if it has one).
  void DropTransaction();

  const std::string netnsPath_;
  const size_t expectedBytes_;
  std::mutex mutex_;
  // pthread's own: std::condition_variable::wait is a GCC 12 symbol
  // (GLIBCXX_3.4.30), beyond the libstdc++ the release binaries may need.
  pthread_cond_t wake_ = PTHREAD_COND_INITIALIZER;
  std::deque<Piece> queue_;
  bool ended_ = false;
  bool aborted_ = false;
  uint32_t pieces_ = 0;
  std::thread thread_;

  // The thread's until it ends.
  // The transaction's socket; empty once it is sent or given back (see CloseCommitSocket).
  CommitSocket socket_;
  // A transaction was refused or could not be sent: nothing more is.
  bool stopped_ = false;
  std::unique_ptr<TransactionBuilder> builder_;
  BuiltBatch built_;
  CommitResult result_;
  bool refused_ = false;
  InputError inputError_;
  double parseMs_ = 0;
};

}  // namespace knp
