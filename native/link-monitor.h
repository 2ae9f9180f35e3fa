// N-API surface of the rtnetlink link monitor (the socket work lives in
// netlink/rtnetlink.h). The JS contract is src/native/link-monitor-types.ts.
#pragma once

#include <napi.h>

// Adds the LinkMonitor class to exports and returns exports.
Napi::Object InitLinkMonitor(Napi::Env env, Napi::Object exports);
