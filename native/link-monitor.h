// Placeholder until the LinkMonitor work lands: the real file replaces this.
#pragma once

#include <napi.h>

void InitLinkMonitor(Napi::Env env, Napi::Object exports);
