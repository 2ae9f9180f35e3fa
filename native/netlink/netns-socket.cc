#include "netns-socket.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace knp {

int OpenSocketInNetns(const char* netnsPath, int domain, int type, int protocol, std::string* error, int* errnoOut) {
  if (netnsPath == nullptr || netnsPath[0] == '\0') {
    int fd = socket(domain, type | SOCK_CLOEXEC, protocol);
    if (fd < 0) {
      if (errnoOut != nullptr) *errnoOut = errno;
      *error = std::string("socket: ") + strerror(errno);
    }
    return fd;
  }
  int nsfd = open(netnsPath, O_RDONLY | O_CLOEXEC);
  if (nsfd < 0) {
    if (errnoOut != nullptr) *errnoOut = errno;
    *error = std::string("open netns ") + netnsPath + ": " + strerror(errno);
    return -1;
  }
  int result = -1;
  std::string threadError;
  int threadErrno = 0;
  // setns affects only the calling thread; a throwaway thread keeps the
  // libuv/JS threads in their own namespace whatever happens.
  std::thread worker([&] {
    if (setns(nsfd, CLONE_NEWNET) != 0) {
      threadErrno = errno;
      threadError = std::string("setns ") + netnsPath + ": " + strerror(errno);
      return;
    }
    result = socket(domain, type | SOCK_CLOEXEC, protocol);
    if (result < 0) {
      threadErrno = errno;
      threadError = std::string("socket in netns: ") + strerror(errno);
    }
  });
  worker.join();
  close(nsfd);
  if (result < 0) {
    *error = threadError;
    if (errnoOut != nullptr) *errnoOut = threadErrno;
  }
  return result;
}

}  // namespace knp
