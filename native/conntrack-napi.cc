// N-API surface of the conntrack cleanup (the ctnetlink work lives in
// netlink/conntrack.h). Arguments are read and checked on the JS thread into
// plain C++ values; dumps and deletes run on a libuv worker thread, which never
// touches napi_env. The JS contract is src/native/conntrack-types.ts.
#include "conntrack-napi.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <string>

#include "netlink/conntrack.h"

namespace {

[[noreturn]] void Fail(Napi::Env env, const std::string& message, const char* code, bool type = false) {
  if (type) {
    Napi::TypeError e = Napi::TypeError::New(env, message);
    e.Set("code", Napi::String::New(env, code));
    throw e;
  }
  Napi::RangeError e = Napi::RangeError::New(env, message);
  e.Set("code", Napi::String::New(env, code));
  throw e;
}

uint8_t FamilyArg(Napi::Env env, Napi::Value v, const char* fn) {
  if (!v.IsNumber()) Fail(env, std::string(fn) + ": family must be 4 or 6", "ERR_INVALID_ARG_TYPE", true);
  double f = v.As<Napi::Number>().DoubleValue();
  if (f == 4) return AF_INET;
  if (f == 6) return AF_INET6;
  Fail(env, std::string(fn) + ": family must be 4 or 6", "ERR_INVALID_ARG_VALUE");
}

uint32_t UintField(Napi::Env env, Napi::Object o, const char* name, uint32_t min, uint32_t max, const char* fn) {
  Napi::Value v = o.Get(name);
  if (!v.IsNumber()) Fail(env, std::string(fn) + ": " + name + " must be a number", "ERR_INVALID_ARG_TYPE", true);
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= min && d <= max) || d != double(uint32_t(d)))
    Fail(env, std::string(fn) + ": " + name + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]",
         "ERR_INVALID_ARG_VALUE");
  return uint32_t(d);
}

knp::ct::Address AddressArg(Napi::Env env, Napi::Value v, uint8_t family, const char* fn) {
  if (!v.IsString()) Fail(env, std::string(fn) + ": addresses must be strings", "ERR_INVALID_ARG_TYPE", true);
  std::string text = v.As<Napi::String>().Utf8Value();
  knp::ct::Address a{};
  if (text.size() > 64 || inet_pton(family, text.c_str(), a.data()) != 1)
    Fail(env, std::string(fn) + ": not an address of the family: " + text.substr(0, 64), "ERR_INVALID_ARG_VALUE");
  return a;
}

std::string NetnsArg(const Napi::CallbackInfo& info, size_t at, const char* fn) {
  if (info.Length() <= at || info[at].IsUndefined() || info[at].IsNull()) return "";
  if (!info[at].IsObject()) Fail(info.Env(), std::string(fn) + ": options must be an object", "ERR_INVALID_ARG_TYPE", true);
  Napi::Value v = info[at].As<Napi::Object>().Get("netns");
  if (v.IsUndefined() || v.IsNull()) return "";
  if (!v.IsString()) Fail(info.Env(), std::string(fn) + ": options.netns must be a string", "ERR_INVALID_ARG_TYPE", true);
  std::string path = v.As<Napi::String>().Utf8Value();
  if (path.size() > 4096 || path.find('\0') != std::string::npos)
    Fail(info.Env(), std::string(fn) + ": options.netns is not a valid path", "ERR_INVALID_ARG_VALUE");
  return path;
}

knp::ct::Target TargetArg(Napi::Env env, Napi::Value v, uint8_t family) {
  const char* fn = "conntrackClean";
  if (!v.IsObject()) Fail(env, "conntrackClean: each target must be an object", "ERR_INVALID_ARG_TYPE", true);
  Napi::Object o = v.As<Napi::Object>();
  knp::ct::Target t;
  t.protocol = uint8_t(UintField(env, o, "protocol", 1, 255, fn));
  t.port = uint16_t(UintField(env, o, "port", 1, 65535, fn));
  Napi::Value address = o.Get("address");
  t.anyAddress = address.IsUndefined() || address.IsNull();
  if (!t.anyAddress) t.address = AddressArg(env, address, family, fn);
  Napi::Value keep = o.Get("keep");
  if (!keep.IsArray()) Fail(env, "conntrackClean: target.keep must be an array", "ERR_INVALID_ARG_TYPE", true);
  Napi::Array list = keep.As<Napi::Array>();
  t.keep.reserve(list.Length());
  for (uint32_t i = 0; i < list.Length(); i++) t.keep.push_back(AddressArg(env, list.Get(i), family, fn));
  return t;
}

Napi::Error NetlinkError(Napi::Env env, const std::string& message, int errnum) {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, "ERR_CONNTRACK_NETLINK"));
  err.Set("errno", Napi::Number::New(env, errnum));
  return err;
}

class CleanWorker : public Napi::AsyncWorker {
 public:
  CleanWorker(Napi::Env env, knp::ct::CleanRequest request, std::string netns)
      : Napi::AsyncWorker(env, "knp.conntrackClean"), deferred_(Napi::Promise::Deferred::New(env)),
        request_(std::move(request)), netns_(std::move(netns)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override { knp::ct::Clean(netns_, request_, &result_); }
  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object out = Napi::Object::New(env);
    out.Set("scanned", Napi::Number::New(env, double(result_.scanned)));
    out.Set("stale", Napi::Number::New(env, double(result_.stale)));
    out.Set("deleted", Napi::Number::New(env, double(result_.deleted)));
    out.Set("vanished", Napi::Number::New(env, double(result_.vanished)));
    out.Set("failed", Napi::Number::New(env, double(result_.failed)));
    out.Set("dumps", Napi::Number::New(env, result_.dumps));
    out.Set("batches", Napi::Number::New(env, result_.batches));
    out.Set("dumpMs", Napi::Number::New(env, result_.dumpMs));
    out.Set("deleteMs", Napi::Number::New(env, result_.deleteMs));
    if (!result_.error.empty()) {
      out.Set("error", Napi::String::New(env, result_.error));
      out.Set("errno", Napi::Number::New(env, result_.errnum));
    }
    deferred_.Resolve(out);
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  knp::ct::CleanRequest request_;
  std::string netns_;
  knp::ct::CleanResult result_;
};

class CreateWorker : public Napi::AsyncWorker {
 public:
  CreateWorker(Napi::Env env, uint8_t family, std::vector<knp::ct::NewEntry> entries, uint32_t batchSize, std::string netns)
      : Napi::AsyncWorker(env, "knp.conntrackCreate"), deferred_(Napi::Promise::Deferred::New(env)), family_(family),
        entries_(std::move(entries)), batchSize_(batchSize), netns_(std::move(netns)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override { knp::ct::Create(netns_, family_, entries_, batchSize_, &result_); }
  void OnOK() override {
    Napi::Env env = Env();
    if (result_.created == 0 && !result_.error.empty()) {
      deferred_.Reject(NetlinkError(env, result_.error, result_.errnum).Value());
      return;
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("created", Napi::Number::New(env, double(result_.created)));
    out.Set("failed", Napi::Number::New(env, double(result_.failed)));
    if (!result_.error.empty()) out.Set("error", Napi::String::New(env, result_.error));
    deferred_.Resolve(out);
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  uint8_t family_;
  std::vector<knp::ct::NewEntry> entries_;
  uint32_t batchSize_;
  std::string netns_;
  knp::ct::CreateResult result_;
};

// conntrackClean(request, options?): Promise<ConntrackCleanResult>
Napi::Value ConntrackClean(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* fn = "conntrackClean";
  if (info.Length() < 1 || !info[0].IsObject()) Fail(env, "conntrackClean: request must be an object", "ERR_INVALID_ARG_TYPE", true);
  Napi::Object o = info[0].As<Napi::Object>();
  knp::ct::CleanRequest request;
  request.family = FamilyArg(env, o.Get("family"), fn);
  Napi::Value full = o.Get("full");
  if (!full.IsBoolean()) Fail(env, "conntrackClean: full must be a boolean", "ERR_INVALID_ARG_TYPE", true);
  request.full = full.As<Napi::Boolean>().Value();
  request.batchSize = UintField(env, o, "batchSize", 1, 4096, fn);
  Napi::Value targets = o.Get("targets");
  if (!targets.IsArray()) Fail(env, "conntrackClean: targets must be an array", "ERR_INVALID_ARG_TYPE", true);
  Napi::Array list = targets.As<Napi::Array>();
  request.targets.reserve(list.Length());
  for (uint32_t i = 0; i < list.Length(); i++) request.targets.push_back(TargetArg(env, list.Get(i), request.family));
  auto* worker = new CleanWorker(env, std::move(request), NetnsArg(info, 1, fn));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

knp::ct::NewEntry EntryArg(Napi::Env env, Napi::Value v, uint8_t family) {
  const char* fn = "conntrackCreate";
  if (!v.IsObject()) Fail(env, "conntrackCreate: each entry must be an object", "ERR_INVALID_ARG_TYPE", true);
  Napi::Object o = v.As<Napi::Object>();
  knp::ct::NewEntry e;
  e.protocol = uint8_t(UintField(env, o, "protocol", 1, 255, fn));
  e.origSrc = AddressArg(env, o.Get("origSrc"), family, fn);
  e.origDst = AddressArg(env, o.Get("origDst"), family, fn);
  e.replySrc = AddressArg(env, o.Get("replySrc"), family, fn);
  e.replyDst = AddressArg(env, o.Get("replyDst"), family, fn);
  e.origSport = uint16_t(UintField(env, o, "origSport", 1, 65535, fn));
  e.origDport = uint16_t(UintField(env, o, "origDport", 1, 65535, fn));
  e.replySport = uint16_t(UintField(env, o, "replySport", 1, 65535, fn));
  e.replyDport = uint16_t(UintField(env, o, "replyDport", 1, 65535, fn));
  e.timeoutSec = UintField(env, o, "timeoutSec", 1, 1u << 30, fn);
  return e;
}

// conntrackCreate(family, entries, batchSize, options?): Promise<{ created, failed, error? }>
Napi::Value ConntrackCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* fn = "conntrackCreate";
  if (info.Length() < 3 || !info[1].IsArray() || !info[2].IsNumber())
    Fail(env, "conntrackCreate(family, entries, batchSize, options?)", "ERR_INVALID_ARG_TYPE", true);
  uint8_t family = FamilyArg(env, info[0], fn);
  Napi::Array list = info[1].As<Napi::Array>();
  std::vector<knp::ct::NewEntry> entries;
  entries.reserve(list.Length());
  for (uint32_t i = 0; i < list.Length(); i++) entries.push_back(EntryArg(env, list.Get(i), family));
  double batch = info[2].As<Napi::Number>().DoubleValue();
  if (!(batch >= 1 && batch <= 4096) || batch != double(uint32_t(batch)))
    Fail(env, "conntrackCreate: batchSize must be an integer in [1, 4096]", "ERR_INVALID_ARG_VALUE");
  auto* worker = new CreateWorker(env, family, std::move(entries), uint32_t(batch), NetnsArg(info, 3, fn));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace

Napi::Object InitConntrack(Napi::Env env, Napi::Object exports) {
  exports.Set("conntrackClean", Napi::Function::New(env, ConntrackClean, "conntrackClean"));
  exports.Set("conntrackCreate", Napi::Function::New(env, ConntrackCreate, "conntrackCreate"));
  return exports;
}
