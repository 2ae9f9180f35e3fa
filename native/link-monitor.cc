// Placeholder until the LinkMonitor work lands: the real file replaces this.
#include "link-monitor.h"

void InitLinkMonitor(Napi::Env env, Napi::Object exports) {}
