// N-API surface of the conntrack cleanup (the ctnetlink work lives in
// netlink/conntrack.h). The JS contract is src/native/conntrack-types.ts.
#pragma once

#include <napi.h>

// Adds conntrackClean and conntrackCreate to exports and returns exports.
Napi::Object InitConntrack(Napi::Env env, Napi::Object exports);
