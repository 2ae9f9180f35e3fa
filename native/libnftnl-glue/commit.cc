#include "commit.h"

#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <memory>
#include <cstring>
#include <ctime>

#include "elapsed.h"
#include "message-builder.h"
#include "netlink/netlink-socket.h"
#include "netlink/socket-pool.h"

namespace knp {

bool OpenCommitSocket(const std::string& netnsPath, CommitSocket* socket, CommitResult* result) {
  const auto opened = std::chrono::steady_clock::now();
  errno = 0;
  socket->sock = TakeSocket(netnsPath, &socket->nsId, &result->transportError);
  result->openMs = MsSince(opened);
  if (!socket->sock) {
    result->transportErrno = errno ? errno : EIO;
    return false;
  }
  socket->baseSeq = socket->sock->NextSeq();
  return true;
}

void CloseCommitSocket(CommitSocket* socket) {
  // Nothing was sent: the socket's queue is as clean as it was.
  if (socket->sock) ReturnSocket(socket->nsId, std::move(socket->sock));
}

void CommitBatch(const Batch& batch, const std::string& netnsPath, CommitResult* result) {
  CommitSocket socket;
  if (!OpenCommitSocket(netnsPath, &socket, result)) return;
  auto t0 = std::chrono::steady_clock::now();
  double cpu0 = ThreadCpuMs();
  BuiltBatch builder;
  BuildMessages(batch, socket.baseSeq, &builder, &result->failures);
  result->buildMs = MsSince(t0);
  result->buildCpuMs = ThreadCpuMs() - cpu0;
  if (!result->failures.empty()) {
    CloseCommitSocket(&socket);
    return;
  }
  SendBuilt(&socket, builder, result);
}

void SendBuilt(CommitSocket* socket, const BuiltBatch& builder, CommitResult* result) {
  // Every early return below but the last drops the socket: its queue may
  // hold unread answers.
  std::unique_ptr<NetlinkSocket> owned = std::move(socket->sock);
  NetlinkSocket& sock = *owned;
  const uint32_t baseSeq = socket->baseSeq;
  result->messages = uint32_t(builder.messages.size());
  result->bytes = builder.buffer.size();
  result->releasedBytes = builder.releasedBytes;
  // Every failing message may answer with an error; room for all of them.
  sock.SizeBuffers(builder.buffer.size() + 65536, std::max<size_t>(1 << 20, builder.messages.size() * 320));
  auto t0 = std::chrono::steady_clock::now();
  double cpu0 = ThreadCpuMs();
  if (send(sock.fd(), builder.buffer.data(), builder.buffer.size(), 0) < 0) {
    result->transportErrno = errno;
    result->transportError = std::string("sending the batch: ") + strerror(errno);
    return;
  }
  result->sendMs = MsSince(t0);
  result->sendCpuMs = ThreadCpuMs() - cpu0;
  t0 = std::chrono::steady_clock::now();
  // The kernel processes the batch inside send(), so its errors are already
  // queued; a generation request behind them marks where they end.
  // Sequence numbers: batch begin baseSeq, messages baseSeq+1..N, end N+1, sentinel N+2.
  const uint32_t lastBatchSeq = baseSeq + uint32_t(builder.messages.size()) + 1;
  char req[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* gen = nftnl_nlmsg_build_hdr(req, NFT_MSG_GETGEN, AF_UNSPEC, NLM_F_ACK, lastBatchSeq + 1);
  std::vector<char> buf(1 << 18);
  bool sentinelSent = false;
  auto handleError = [&](const nlmsghdr* nlh) {
    const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
    if (err->error == 0) return;
    std::string text;
    uint32_t offset = 0;
    bool hasOffset = false;
    ParseExtAck(nlh, &text, &offset, &hasOffset);
    if (text.empty()) text = strerror(-err->error);
    int64_t index = -1;
    uint32_t seq = nlh->nlmsg_seq;
    if (seq > baseSeq && seq < lastBatchSeq) {
      const MessageInfo& m = builder.messages[seq - baseSeq - 1];
      index = m.opIndex;
      if (m.elements && m.elemCount > 0) {
        index = builder.elementOps[m.firstElement];
        if (hasOffset) {
          int64_t at = ElementAtOffset(builder, m, offset);
          if (at >= 0) index = at;
        }
      }
    }
    result->failures.push_back({index, -err->error, text});
  };
  const uint32_t sentinelSeq = gen->nlmsg_seq;
  for (;;) {
    if (!sentinelSent) {
      if (send(sock.fd(), gen, gen->nlmsg_len, 0) < 0) {
        result->transportErrno = errno;
        result->transportError = std::string("sending the generation request: ") + strerror(errno);
        return;
      }
      sentinelSent = true;
    }
    // MSG_TRUNC: the datagram's real length, so that a cut one is seen.
    ssize_t n = recv(sock.fd(), buf.data(), buf.size(), MSG_TRUNC);
    if (n > ssize_t(buf.size())) {
      result->transportErrno = EMSGSIZE;
      result->transportError = "reading the batch's answers: an answer of " + std::to_string(n) +
                               " bytes was cut to " + std::to_string(buf.size());
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      // ENOBUFS: more errors than the receive buffer held; some are lost.
      result->transportErrno = errno;
      result->transportError = std::string("reading the batch's answers: ") + strerror(errno);
      if (errno == ENOBUFS && result->failures.empty())
        result->failures.push_back({-1, ENOBUFS, "the batch failed; its errors overflowed the receive buffer"});
      return;
    }
    int len = int(n);
    for (auto* nlh = reinterpret_cast<const nlmsghdr*>(buf.data()); mnl_nlmsg_ok(nlh, len);
         nlh = mnl_nlmsg_next(nlh, &len)) {
      if (nlh->nlmsg_seq == sentinelSeq) {
        if (nlh->nlmsg_type == NLMSG_ERROR) {  // the ack ends the sentinel's answer
          result->receiveMs = MsSince(t0);
          ReturnSocket(socket->nsId, std::move(owned));
          return;
        }
        continue;
      }
      if (nlh->nlmsg_type == NLMSG_ERROR) handleError(nlh);
    }
  }
}

}  // namespace knp
