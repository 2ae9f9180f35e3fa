// Commit sockets kept open between commits, one per network namespace.
//
// Closing a NETLINK_NETFILTER socket right after a transaction that deleted
// something blocks until the kernel has finished destroying those objects
// (it flushes its deferred-destruction work, which waits for an RCU grace
// period): 5-10 ms of every incremental commit here, more than the rest of our
// user space together. An agent commits to one namespace many times a minute,
// so the socket is reused instead.
#pragma once

#include <memory>
#include <string>

#include "netlink-socket.h"

namespace knp {

// A socket in the namespace at netnsPath (the caller's own for ""): an idle one
// from the pool when that path still names the same namespace, else a new one.
// Returns null with *error set when none can be opened.
std::unique_ptr<NetlinkSocket> TakeSocket(const std::string& netnsPath, std::string* error);

// Gives a socket whose answers were all read back to the pool. A socket with
// unread answers (a transport error mid-way) must be dropped instead.
void ReturnSocket(const std::string& netnsPath, std::unique_ptr<NetlinkSocket> sock);

}  // namespace knp
