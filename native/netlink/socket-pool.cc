#include "socket-pool.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <list>
#include <mutex>

namespace knp {
namespace {

NamespaceId IdOf(const std::string& netnsPath) {
  NamespaceId id;
  struct stat st {};
  if (stat(netnsPath.empty() ? "/proc/self/ns/net" : netnsPath.c_str(), &st) != 0) return id;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  id.known = true;
  return id;
}

struct Idle {
  NamespaceId id;
  std::unique_ptr<NetlinkSocket> sock;
};

// Few: an agent uses one namespace; tests use many, each briefly, and every
// pooled socket keeps its namespace (and its tables) alive.
constexpr size_t kMaxIdle = 4;
std::mutex poolMutex;
std::list<Idle> pool;  // most recently returned first

// Anything still queued (there should be nothing) would be read as this
// commit's answers.
void Drain(NetlinkSocket& sock) {
  char buf[8192];
  while (recv(sock.fd(), buf, sizeof(buf), MSG_DONTWAIT) > 0) {
  }
}

}  // namespace

std::unique_ptr<NetlinkSocket> TakeSocket(const std::string& netnsPath, NamespaceId* id, std::string* error) {
  *id = IdOf(netnsPath);
  if (id->known) {
    std::unique_ptr<NetlinkSocket> found;
    {
      std::lock_guard<std::mutex> lock(poolMutex);
      for (auto it = pool.begin(); it != pool.end(); ++it) {
        if (it->id == *id) {
          found = std::move(it->sock);
          pool.erase(it);
          break;
        }
      }
    }
    if (found) {
      Drain(*found);
      return found;
    }
  }
  auto sock = std::make_unique<NetlinkSocket>();
  if (!sock->Open(netnsPath, error)) return nullptr;
  return sock;
}

void ReturnSocket(const NamespaceId& id, std::unique_ptr<NetlinkSocket> sock) {
  if (!sock || !id.known) return;
  std::unique_ptr<NetlinkSocket> evicted;
  {
    std::lock_guard<std::mutex> lock(poolMutex);
    pool.push_front({id, std::move(sock)});
    if (pool.size() > kMaxIdle) {
      evicted = std::move(pool.back().sock);
      pool.pop_back();
    }
  }
  // Closed outside the lock: the close may wait for the kernel (see the header).
}

}  // namespace knp
