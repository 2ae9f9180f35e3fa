// Opening a socket inside another network namespace.
#pragma once

#include <string>

namespace knp {

// Creates socket(domain, type, protocol) in the network namespace at netnsPath
// (e.g. /var/run/netns/NAME), or in the caller's own namespace when netnsPath is
// null or empty. A socket stays bound to the namespace it was created in, so the
// switch happens on a short-lived thread and the caller's thread never changes
// namespace. Returns the fd, or -1 with *error describing what failed and, when
// errnoOut is given, *errnoOut the failing call's errno (which happened on the
// short-lived thread, so the caller's errno does not carry it).
int OpenSocketInNetns(const char* netnsPath, int domain, int type, int protocol, std::string* error,
                      int* errnoOut = nullptr);

}  // namespace knp
