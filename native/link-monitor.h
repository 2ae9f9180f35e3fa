// N-API surface of the rtnetlink link monitor (the socket work lives in
// libnftnl-glue/rtnetlink.h). The JS contract is src/links/native-types.ts.
#pragma once

#include <napi.h>

// Adds the LinkMonitor class to exports and returns exports.
Napi::Object InitLinkMonitor(Napi::Env env, Napi::Object exports);
