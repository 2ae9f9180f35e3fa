#include "netlink-socket.h"

#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "netns-socket.h"

namespace knp {

NetlinkSocket::~NetlinkSocket() {
  if (fd_ >= 0) close(fd_);
}

bool NetlinkSocket::Open(const std::string& netnsPath, std::string* error) {
  fd_ = OpenSocketInNetns(netnsPath.c_str(), AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER, error);
  if (fd_ < 0) return false;
  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *error = std::string("bind netlink socket: ") + strerror(errno);
    return false;
  }
  int on = 1;
  // Extended acks carry the kernel's reason and the offending attribute;
  // capped acks keep a large batch's errors from echoing whole messages back.
  setsockopt(fd_, SOL_NETLINK, NETLINK_EXT_ACK, &on, sizeof(on));
  setsockopt(fd_, SOL_NETLINK, NETLINK_CAP_ACK, &on, sizeof(on));
  seq_ = uint32_t(time(nullptr));
  return true;
}

void NetlinkSocket::SizeBuffers(size_t sendBytes, size_t receiveBytes) {
  auto force = [&](int forced, int plain, size_t bytes) {
    int v = bytes > (1u << 30) ? (1 << 30) : int(bytes);
    if (setsockopt(fd_, SOL_SOCKET, forced, &v, sizeof(v)) != 0) setsockopt(fd_, SOL_SOCKET, plain, &v, sizeof(v));
  };
  force(SO_SNDBUFFORCE, SO_SNDBUF, sendBytes);
  force(SO_RCVBUFFORCE, SO_RCVBUF, receiveBytes);
}

void ParseExtAck(const nlmsghdr* nlh, std::string* message, uint32_t* offset, bool* hasOffset) {
  *hasOffset = false;
  if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS)) return;
  const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
  size_t skip = sizeof(nlmsgerr);
  // Without NLM_F_CAPPED the original request follows the header.
  if (!(nlh->nlmsg_flags & NLM_F_CAPPED)) skip += err->msg.nlmsg_len - sizeof(nlmsghdr);
  size_t payload = mnl_nlmsg_get_payload_len(nlh);
  if (skip > payload) return;
  const char* base = static_cast<const char*>(mnl_nlmsg_get_payload(nlh));
  size_t pos = MNL_ALIGN(skip);
  while (pos + sizeof(nlattr) <= payload) {
    const auto* attr = reinterpret_cast<const nlattr*>(base + pos);
    if (attr->nla_len < sizeof(nlattr) || pos + attr->nla_len > payload) break;
    uint16_t type = attr->nla_type & NLA_TYPE_MASK;
    const char* value = base + pos + MNL_ALIGN(sizeof(nlattr));
    size_t len = attr->nla_len - MNL_ALIGN(sizeof(nlattr));
    if (type == NLMSGERR_ATTR_MSG && len > 0) {
      *message = std::string(value, strnlen(value, len));
    } else if (type == NLMSGERR_ATTR_OFFS && len >= 4) {
      memcpy(offset, value, 4);
      *hasOffset = true;
    }
    pos += MNL_ALIGN(attr->nla_len);
  }
}

int NetlinkSocket::Request(const nlmsghdr* request, const std::function<void(const nlmsghdr*)>& onMessage,
                           bool* interrupted, std::string* error) {
  if (send(fd_, request, request->nlmsg_len, 0) < 0) {
    *error = std::string("send: ") + strerror(errno);
    return errno;
  }
  std::vector<char>& buf = answers_;
  if (buf.empty()) buf.resize(1 << 18);
  const uint32_t seq = request->nlmsg_seq;
  for (;;) {
    // MSG_TRUNC: the datagram's real length. A dump skb is at most 32 KiB,
    // so a longer one means a part of the answer is lost: an error, not a
    // shorter listing.
    ssize_t n = recv(fd_, buf.data(), buf.size(), MSG_TRUNC);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = std::string("recv: ") + strerror(errno);
      return errno;
    }
    if (size_t(n) > buf.size()) {
      *error = "recv: an answer of " + std::to_string(n) + " bytes was cut to " + std::to_string(buf.size());
      return EMSGSIZE;
    }
    int len = int(n);
    for (auto* nlh = reinterpret_cast<const nlmsghdr*>(buf.data()); mnl_nlmsg_ok(nlh, len);
         nlh = mnl_nlmsg_next(nlh, &len)) {
      if (nlh->nlmsg_seq != seq) continue;  // a late answer to an earlier request
      if (nlh->nlmsg_flags & NLM_F_DUMP_INTR) *interrupted = true;
      if (nlh->nlmsg_type == NLMSG_DONE) return 0;
      if (nlh->nlmsg_type == NLMSG_ERROR) {
        const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
        if (err->error == 0) return 0;
        std::string text;
        uint32_t off;
        bool hasOff;
        ParseExtAck(nlh, &text, &off, &hasOff);
        *error = text.empty() ? strerror(-err->error) : text;
        return -err->error;
      }
      onMessage(nlh);
    }
  }
}

}  // namespace knp
