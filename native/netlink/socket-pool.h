// Commit sockets kept open between commits, one per network namespace.
//
// Closing a NETLINK_NETFILTER socket right after a transaction that deleted
// something blocks until the kernel has finished destroying those objects
// (it flushes its deferred-destruction work, which waits for an RCU grace
// period): 5-10 ms of every incremental commit here, more than the rest of our
// user space together. An agent commits to one namespace many times a minute,
// so the socket is reused instead.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "netlink-socket.h"

namespace knp {

// Namespaces are told apart by the identity of their nsfs file, not by path: a
// path can be deleted and re-created for a new namespace, and a pooled socket
// must not program the old one (which it keeps alive).
struct NamespaceId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool known = false;  // the path could not be stat'ed: the socket is not pooled
  bool operator==(const NamespaceId& o) const { return known && o.known && dev == o.dev && ino == o.ino; }
};

// A socket in the namespace at netnsPath (the caller's own for ""): an idle one
// from the pool when that path still names the same namespace, else a new one.
// *id is the namespace it was taken for, to hand back with the socket: the
// path may name another namespace by then. Returns null with *error set when
// none can be opened.
std::unique_ptr<NetlinkSocket> TakeSocket(const std::string& netnsPath, NamespaceId* id, std::string* error);

// Gives a socket whose answers were all read back to the pool, under the id
// TakeSocket gave. A socket with unread answers (a transport error mid-way)
// must be dropped instead.
void ReturnSocket(const NamespaceId& id, std::unique_ptr<NetlinkSocket> sock);

}  // namespace knp
