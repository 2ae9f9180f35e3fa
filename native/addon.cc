// N-API surface of kube-nft-proxy (skeleton).
#include <napi.h>

#include "link-monitor.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  InitLinkMonitor(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(kube_nft_proxy, Init)
