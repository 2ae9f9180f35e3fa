// N-API surface of reading one table's own attributes (netlink/nft-table.h).
// The JS contract is in src/native/addon.ts (tableUserdata).
#pragma once

#include <napi.h>

// Adds tableUserdata to exports and returns exports.
Napi::Object InitTableInfo(Napi::Env env, Napi::Object exports);
