// N-API surface of kube-nft-proxy: commit a batch, list a table, read the
// ruleset generation, and (from link-monitor.cc) follow links. Argument types
// are checked on the JS thread, where a batch is pinned, not copied (see
// CommitWorker); checking a batch's contents and all netlink I/O run on libuv's
// worker threads, which never touch napi_env. The one process-wide state is the
// pool of idle commit sockets (socket-pool.h), which the workers share behind a
// mutex.
#include <napi.h>

#include <malloc.h>

#include <chrono>
#include <cstring>

#include "libnftnl-glue/batch.h"
#include "libnftnl-glue/commit.h"
#include "libnftnl-glue/list.h"
#include "libnftnl-glue/message-builder.h"
#include "conntrack-napi.h"
#include "link-monitor.h"
#include "table-napi.h"

namespace {

Napi::Error WithCode(Napi::Error err, const std::string& code) {
  err.Set("code", Napi::String::New(err.Env(), code));
  return err;
}

[[noreturn]] void ThrowType(Napi::Env env, const std::string& message, const std::string& code = "ERR_INVALID_ARG_TYPE") {
  throw WithCode(Napi::TypeError::New(env, message), code);
}

[[noreturn]] void ThrowRange(Napi::Env env, const std::string& message, const std::string& code) {
  throw WithCode(Napi::RangeError::New(env, message), code);
}

Napi::Error NetlinkError(Napi::Env env, const std::string& message, int errnum) {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, "ERR_NFT_NETLINK"));
  err.Set("errno", Napi::Number::New(env, errnum));
  return err;
}

// Reads the optional { netns?: string } argument.
std::string NetnsOption(const Napi::CallbackInfo& info, size_t at) {
  if (info.Length() <= at || info[at].IsUndefined() || info[at].IsNull()) return "";
  if (!info[at].IsObject()) ThrowType(info.Env(), "options must be an object");
  Napi::Value v = info[at].As<Napi::Object>().Get("netns");
  if (v.IsUndefined() || v.IsNull()) return "";
  if (!v.IsString()) ThrowType(info.Env(), "options.netns must be a string");
  std::string path = v.As<Napi::String>().Utf8Value();
  if (path.size() > 4096 || path.find('\0') != std::string::npos)
    ThrowRange(info.Env(), "options.netns is not a valid path", "ERR_INVALID_ARG_VALUE");
  return path;
}

Napi::Error InputErrorToJs(Napi::Env env, const knp::InputError& e) {
  if (e.isTypeError) return WithCode(Napi::TypeError::New(env, "commit: " + e.message), e.code);
  return WithCode(Napi::RangeError::New(env, "commit: " + e.message), e.code);
}

// Checks and sends one batch on a worker thread. The batch's bytes are read
// where JS wrote them, not copied: the Uint8Array is pinned by a reference
// until the worker is done (a full sync's batch is tens of MiB, and a copy
// doubled the agent's peak memory). Its contract, in src/native/addon.ts: JS leaves
// the bytes alone until the promise settles. A typed array's backing store
// does not move with V8's garbage collection, so the worker may read it.
class CommitWorker : public Napi::AsyncWorker {
  // Batches from this size on are followed by malloc_trim (a 1k-service full sync is ~5 MB).
  static constexpr size_t kTrimAfterBytes = size_t(4) << 20;

 public:
  CommitWorker(Napi::Env env, Napi::Uint8Array batch, std::string netns)
      : Napi::AsyncWorker(env, "knp.commit"), deferred_(Napi::Promise::Deferred::New(env)),
        pinned_(Napi::Persistent(batch)), data_(batch.Data()), size_(batch.ByteLength()), netns_(std::move(netns)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    auto t0 = std::chrono::steady_clock::now();
    parsed_ = knp::ParseBatch(data_, size_, &batch_, &inputError_);
    parseMs_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (parsed_) knp::CommitBatch(batch_, netns_, &result_);
    // The answers are in result_. The netlink messages built from a full
    // sync's batch (freed when CommitBatch returned) are tens of MiB: glibc
    // keeps such freed memory in its arenas (the worker threads' arenas, and
    // blocks below the mmap threshold, which grows after every large free)
    // and never returns it to the OS for an agent that then idles. Trimming
    // costs a few ms, off the JS thread, only after large batches.
    batch_ = knp::Batch{};
    if (size_ >= kTrimAfterBytes) malloc_trim(0);
  }

  void OnOK() override {
    Napi::Env env = Env();
    if (!parsed_) {
      deferred_.Reject(InputErrorToJs(env, inputError_).Value());
      return;
    }
    if (!result_.transportError.empty() && result_.failures.empty()) {
      deferred_.Reject(NetlinkError(env, result_.transportError, result_.transportErrno).Value());
      return;
    }
    Napi::Object out = Napi::Object::New(env);
    Napi::Array failures = Napi::Array::New(env, result_.failures.size());
    for (size_t i = 0; i < result_.failures.size(); i++) {
      const auto& f = result_.failures[i];
      Napi::Object o = Napi::Object::New(env);
      o.Set("index", Napi::Number::New(env, double(f.index)));
      o.Set("errno", Napi::Number::New(env, f.error));
      o.Set("message", Napi::String::New(env, f.message));
      failures.Set(uint32_t(i), o);
    }
    out.Set("failures", failures);
    out.Set("messages", Napi::Number::New(env, result_.messages));
    out.Set("bytes", Napi::Number::New(env, double(result_.bytes)));
    Napi::Object timing = Napi::Object::New(env);
    timing.Set("parseMs", Napi::Number::New(env, parseMs_));
    timing.Set("openMs", Napi::Number::New(env, result_.openMs));
    timing.Set("buildMs", Napi::Number::New(env, result_.buildMs));
    timing.Set("sendMs", Napi::Number::New(env, result_.sendMs));
    timing.Set("receiveMs", Napi::Number::New(env, result_.receiveMs));
    timing.Set("buildCpuMs", Napi::Number::New(env, result_.buildCpuMs));
    timing.Set("sendCpuMs", Napi::Number::New(env, result_.sendCpuMs));
    out.Set("timing", timing);
    deferred_.Resolve(out);
  }

  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  // Released with the worker, on the JS thread, after OnOK/OnError.
  Napi::Reference<Napi::Uint8Array> pinned_;
  const uint8_t* data_;
  size_t size_;
  std::string netns_;
  bool parsed_ = false;
  double parseMs_ = 0;
  knp::InputError inputError_;
  knp::Batch batch_;
  knp::CommitResult result_;
};

class ListWorker : public Napi::AsyncWorker {
 public:
  ListWorker(Napi::Env env, uint32_t family, std::string table, std::string netns)
      : Napi::AsyncWorker(env, "knp.list"), deferred_(Napi::Promise::Deferred::New(env)), family_(family),
        table_(std::move(table)), netns_(std::move(netns)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override { knp::ListTable(netns_, family_, table_, &result_); }

  void OnOK() override {
    Napi::Env env = Env();
    if (!result_.error.empty()) {
      deferred_.Reject(NetlinkError(env, result_.error, result_.errorNumber).Value());
    } else if (!result_.found) {
      deferred_.Resolve(env.Null());
    } else {
      deferred_.Resolve(Napi::Buffer<uint8_t>::Copy(env, result_.bytes.data(), result_.bytes.size()));
    }
  }

 private:
  Napi::Promise::Deferred deferred_;
  uint32_t family_;
  std::string table_;
  std::string netns_;
  knp::ListResult result_;
};

class GenerationWorker : public Napi::AsyncWorker {
 public:
  GenerationWorker(Napi::Env env, std::string netns)
      : Napi::AsyncWorker(env, "knp.generation"), deferred_(Napi::Promise::Deferred::New(env)),
        netns_(std::move(netns)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override { ok_ = knp::ReadGeneration(netns_, &gen_, &error_, &errno_); }
  void OnOK() override {
    if (ok_) deferred_.Resolve(Napi::Number::New(Env(), gen_));
    else deferred_.Reject(NetlinkError(Env(), error_, errno_).Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::string netns_;
  uint32_t gen_ = 0;
  bool ok_ = false;
  std::string error_;
  int errno_ = 0;
};

// commit(batch: Uint8Array, options?: { netns?: string }): Promise<{ failures, messages, bytes, timing }>
// Wrong argument types throw; a malformed batch rejects (RangeError with a code).
Napi::Value Commit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    ThrowType(env, "commit: batch must be a Uint8Array");
  Napi::Uint8Array data = info[0].As<Napi::Uint8Array>();
  std::string netns = NetnsOption(info, 1);
  auto* worker = new CommitWorker(env, data, std::move(netns));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

// list(family: number, table: string, options?): Promise<Buffer | null>
Napi::Value List(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber()) ThrowType(env, "list: family must be a number");
  if (!info[1].IsString()) ThrowType(env, "list: table must be a string");
  double family = info[0].As<Napi::Number>().DoubleValue();
  if (family != double(uint32_t(family)) || !knp::IsKnownFamily(uint32_t(family)))
    ThrowRange(env, "list: unknown address family " + std::to_string(family), "ERR_NFT_FAMILY");
  std::string table = info[1].As<Napi::String>().Utf8Value();
  if (table.empty() || table.size() > knp::kMaxNameLength)
    ThrowRange(env, "list: table name must have 1 to 255 bytes", "ERR_NFT_NAME_TOO_LONG");
  if (table.find('\0') != std::string::npos) ThrowRange(env, "list: table name contains a NUL", "ERR_NFT_NAME_INVALID");
  std::string netns = NetnsOption(info, 2);
  auto* worker = new ListWorker(env, uint32_t(family), std::move(table), std::move(netns));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

// generation(options?): Promise<number>
Napi::Value Generation(const Napi::CallbackInfo& info) {
  std::string netns = NetnsOption(info, 0);
  auto* worker = new GenerationWorker(info.Env(), std::move(netns));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

// trimMemory(): boolean. Gives the free pages of every malloc arena back to the
// OS (glibc's malloc_trim(0)); true when some were. For an idle process after a
// large burst of work (V8's worker threads compile and mark in malloc'd zones,
// each in its own arena), on the JS thread: a few ms.
Napi::Value TrimMemory(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), malloc_trim(0) != 0);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("commit", Napi::Function::New(env, Commit, "commit"));
  exports.Set("list", Napi::Function::New(env, List, "list"));
  exports.Set("generation", Napi::Function::New(env, Generation, "generation"));
  exports.Set("trimMemory", Napi::Function::New(env, TrimMemory, "trimMemory"));
  exports.Set("elementsPerMessage", Napi::Number::New(env, knp::kElementsPerMessage));
  InitLinkMonitor(env, exports);
  InitConntrack(env, exports);
  InitTableInfo(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(kube_nft_proxy, Init)
