// tableUserdata(family, table, options?): Promise<Uint8Array | null>: the
// table's userdata (empty when it has none), or null when there is no such
// table. Arguments are checked on the JS thread; the request runs on a worker.
#include "table-napi.h"

#include <string>

#include "netlink/nft-table.h"

namespace {

[[noreturn]] void Throw(Napi::Env env, const std::string& message, const char* code) {
  Napi::TypeError e = Napi::TypeError::New(env, "tableUserdata: " + message);
  e.Set("code", Napi::String::New(env, code));
  throw e;
}

class TableInfoWorker : public Napi::AsyncWorker {
 public:
  TableInfoWorker(Napi::Env env, uint8_t family, std::string table, std::string netns)
      : Napi::AsyncWorker(env, "knp.tableUserdata"), deferred_(Napi::Promise::Deferred::New(env)), family_(family),
        table_(std::move(table)), netns_(std::move(netns)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override { knp::ReadTableInfo(netns_, family_, table_, &info_); }
  void OnOK() override {
    Napi::Env env = Env();
    if (!info_.error.empty()) {
      Napi::Error err = Napi::Error::New(env, info_.error);
      err.Set("code", Napi::String::New(env, "ERR_NFT_NETLINK"));
      err.Set("errno", Napi::Number::New(env, info_.errnum));
      deferred_.Reject(err.Value());
    } else if (!info_.found) {
      deferred_.Resolve(env.Null());
    } else {
      deferred_.Resolve(Napi::Buffer<uint8_t>::Copy(env, info_.userdata.data(), info_.userdata.size()));
    }
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  uint8_t family_;
  std::string table_;
  std::string netns_;
  knp::TableInfo info_;
};

Napi::Value TableUserdata(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsString()) Throw(env, "(family: number, table: string, options?)", "ERR_INVALID_ARG_TYPE");
  double family = info[0].As<Napi::Number>().DoubleValue();
  if (family != 1 && family != 2 && family != 10) Throw(env, "family must be 1 (inet), 2 (ip) or 10 (ip6)", "ERR_NFT_FAMILY");
  std::string table = info[1].As<Napi::String>().Utf8Value();
  if (table.empty() || table.size() > 255 || table.find('\0') != std::string::npos) Throw(env, "bad table name", "ERR_NFT_NAME_INVALID");
  std::string netns;
  if (info.Length() > 2 && info[2].IsObject()) {
    Napi::Value v = info[2].As<Napi::Object>().Get("netns");
    if (v.IsString()) netns = v.As<Napi::String>().Utf8Value();
    else if (!v.IsUndefined() && !v.IsNull()) Throw(env, "options.netns must be a string", "ERR_INVALID_ARG_TYPE");
    if (netns.size() > 4096 || netns.find('\0') != std::string::npos) Throw(env, "options.netns is not a valid path", "ERR_INVALID_ARG_VALUE");
  }
  auto* worker = new TableInfoWorker(env, uint8_t(family), std::move(table), std::move(netns));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace

Napi::Object InitTableInfo(Napi::Env env, Napi::Object exports) {
  exports.Set("tableUserdata", Napi::Function::New(env, TableUserdata, "tableUserdata"));
  return exports;
}
