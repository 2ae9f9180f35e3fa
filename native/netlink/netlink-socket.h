// A NETLINK_NETFILTER socket, optionally in another network namespace, with the
// request/response loops the commit and list paths share. Used from worker
// threads only; holds no state beyond its fd, sequence counter and the buffer
// answers are read into (a listing makes a request per chain: one buffer for all).
#pragma once

#include <linux/netlink.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace knp {

class NetlinkSocket {
 public:
  NetlinkSocket() = default;
  ~NetlinkSocket();
  NetlinkSocket(const NetlinkSocket&) = delete;
  NetlinkSocket& operator=(const NetlinkSocket&) = delete;

  // Opens, binds and switches on extended acks; error describes what failed.
  bool Open(const std::string& netnsPath, std::string* error);
  // Raises the kernel buffers (SO_*BUFFORCE needs CAP_NET_ADMIN; falls back quietly).
  void SizeBuffers(size_t sendBytes, size_t receiveBytes);

  int fd() const { return fd_; }
  uint32_t NextSeq() { return seq_++; }

  // Sends one request and reads replies until the ack, NLMSG_DONE or an error.
  // onMessage sees every data message. Returns 0 or a positive errno;
  // *interrupted is set when a dump reported NLM_F_DUMP_INTR.
  int Request(const nlmsghdr* request, const std::function<void(const nlmsghdr*)>& onMessage,
              bool* interrupted, std::string* error);

 private:
  int fd_ = -1;
  uint32_t seq_ = 1;
  std::vector<char> answers_;
};

// Reads the text and the offending attribute offset of an extended ack.
void ParseExtAck(const nlmsghdr* nlh, std::string* message, uint32_t* offset, bool* hasOffset);

}  // namespace knp
