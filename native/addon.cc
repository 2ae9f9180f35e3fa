// N-API surface of kube-nft-proxy: commit a batch (or one transaction in
// pieces, BatchStream), check one without the kernel, list a table, read the
// ruleset generation, and (from link-monitor.cc) follow links. Argument types
// are checked and a batch is copied (or, in a buffer from allocateBatch,
// taken) on the JS thread (see CommitWorker); checking a batch's contents and
// all netlink I/O run on libuv's worker threads (a stream's pieces on a
// thread of its own), which never touch napi_env. Process-wide state: the
// pool of idle commit sockets (socket-pool.h), which the workers share behind
// a mutex, and the registry of allocated batch buffers.
#include <napi.h>

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <cstring>

#include "libnftnl-glue/batch.h"
#include "libnftnl-glue/commit.h"
#include "libnftnl-glue/commit-stream.h"
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

// A batch that does not pass the allow-list: an error with a code and, when
// an operation's bytes are wrong, its index.
Napi::Error InputErrorToJs(Napi::Env env, const char* what, const knp::InputError& e) {
  std::string message = std::string(what) + ": " + e.message;
  Napi::Error err = e.isTypeError ? WithCode(Napi::TypeError::New(env, message), e.code)
                                  : WithCode(Napi::RangeError::New(env, message), e.code);
  if (e.index >= 0) err.Set("index", Napi::Number::New(env, double(e.index)));
  return err;
}

Napi::Array FailuresToJs(Napi::Env env, const std::vector<knp::OperationFailure>& failures) {
  Napi::Array out = Napi::Array::New(env, failures.size());
  for (size_t i = 0; i < failures.size(); i++) {
    const auto& f = failures[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("index", Napi::Number::New(env, double(f.index)));
    o.Set("errno", Napi::Number::New(env, f.error));
    o.Set("message", Napi::String::New(env, f.message));
    o.Set("origin", Napi::String::New(env, f.origin == knp::FailureOrigin::Builder ? "builder" : "kernel"));
    out.Set(uint32_t(i), o);
  }
  return out;
}

// A batch buffer the addon allocated for JS to encode into (allocateBatch):
// a mapping of its own, so that the commit can give its pages back as it
// reads them (Batch::pagesOwned). JS and the commit worker each hold a
// reference; the mapping goes with the last.
struct ExternalBatch {
  uint8_t* data;
  size_t size;
  std::atomic<int> refs{1};
  ExternalBatch(uint8_t* d, size_t n) : data(d), size(n) {}
  void Release() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      munmap(data, size);
      delete this;
    }
  }
};

// Every live ExternalBatch by its data pointer: how commit() knows one of ours.
// Finalizers of different environments (worker threads) may race: a mutex.
std::mutex externalBatchesMutex;
std::unordered_map<const void*, ExternalBatch*> externalBatches;

// allocateBatch(size): ArrayBuffer of `size` zero bytes in memory the addon
// owns. A full sync's batch is tens to hundreds of MiB: commit() takes such a
// buffer from JS (detaching it) instead of copying it, so it never exists
// twice. Fresh anonymous pages: resident only once written, and never part of
// malloc's arenas (which may keep freed memory, see CommitWorker).
Napi::Value AllocateBatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) ThrowType(env, "allocateBatch: size must be a number");
  double size = info[0].As<Napi::Number>().DoubleValue();
  if (!(size >= 1 && size <= double(UINT32_MAX)) || size != double(uint64_t(size)))
    ThrowRange(env, "allocateBatch: size must be an integer from 1 to 2^32-1", "ERR_INVALID_ARG_VALUE");
  void* mapped = mmap(nullptr, size_t(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw Napi::Error::New(env, "allocateBatch: out of memory");
  auto* data = static_cast<uint8_t*>(mapped);
  auto* batch = new ExternalBatch(data, size_t(size));
  {
    std::lock_guard<std::mutex> lock(externalBatchesMutex);
    externalBatches.emplace(data, batch);
  }
  napi_value out;
  napi_status status = napi_create_external_arraybuffer(
      env, data, size_t(size),
      [](napi_env, void* data, void* hint) {
        {
          std::lock_guard<std::mutex> lock(externalBatchesMutex);
          externalBatches.erase(data);
        }
        static_cast<ExternalBatch*>(hint)->Release();
      },
      batch, &out);
  if (status != napi_ok) {
    {
      std::lock_guard<std::mutex> lock(externalBatchesMutex);
      externalBatches.erase(data);
    }
    batch->Release();
    // Runtimes with a memory sandbox refuse external buffers: the caller falls back to its own.
    Napi::Error error = Napi::Error::New(env, "allocateBatch: this runtime refuses external buffers");
    error.Set("code", Napi::String::New(env, "ERR_NO_EXTERNAL_BUFFERS"));
    throw error;
  }
  return Napi::Value(env, out);
}

// The batch argument: a Uint8Array. One in a buffer from allocateBatch is
// taken: the buffer is detached, so JS can no longer write what the worker
// checks and reads. Any other is copied into memory the addon owns (JS may
// write to its buffer, or another thread to a shared one, while a worker
// checks and reads); the copy is cheap for the small batches of incremental
// syncs (100k elements, 4.4 MB, cost 2-4 ms on the JS thread of a loaded
// 2-core machine, test/native/batch-handoff.test.ts).
// *pagesOwned: whether it was taken and starts its mapping (Batch::pagesOwned).
knp::BatchBytes BatchArgument(const Napi::CallbackInfo& info, const char* what, size_t* size, bool take,
                              bool* pagesOwned = nullptr) {
  if (info.Length() < 1 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    ThrowType(info.Env(), std::string(what) + ": batch must be a Uint8Array");
  Napi::Uint8Array data = info[0].As<Napi::Uint8Array>();
  *size = data.ByteLength();
  // The encoding's offsets are 32-bit: a larger buffer is refused before it is copied.
  if (*size > UINT32_MAX)
    ThrowRange(info.Env(), std::string(what) + ": batch buffer of 4 GiB or more", "ERR_NFT_BATCH_INVALID");
  if (take) {
    Napi::ArrayBuffer buffer = data.ArrayBuffer();
    ExternalBatch* external = nullptr;
    {
      std::lock_guard<std::mutex> lock(externalBatchesMutex);
      auto found = externalBatches.find(buffer.Data());
      if (found != externalBatches.end()) external = found->second;
    }
    if (external != nullptr) {
      const uint8_t* start = data.Data();
      if (pagesOwned != nullptr) *pagesOwned = start == external->data;
      external->refs.fetch_add(1, std::memory_order_relaxed);
      buffer.Detach();
      return knp::BatchBytes(start, [external](const uint8_t*) { external->Release(); });
    }
  }
  return knp::CopyBatch(data.Data(), *size);
}

// What commit() and a BatchStream's commit() resolve with.
Napi::Object CommitResultToJs(Napi::Env env, const knp::CommitResult& result, double parseMs) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("failures", FailuresToJs(env, result.failures));
  out.Set("messages", Napi::Number::New(env, result.messages));
  out.Set("bytes", Napi::Number::New(env, double(result.bytes)));
  out.Set("releasedBytes", Napi::Number::New(env, double(result.releasedBytes)));
  out.Set("pieces", Napi::Number::New(env, result.pieces));
  out.Set("transactions", Napi::Number::New(env, result.transactions));
  Napi::Object timing = Napi::Object::New(env);
  timing.Set("parseMs", Napi::Number::New(env, parseMs));
  timing.Set("openMs", Napi::Number::New(env, result.openMs));
  timing.Set("buildMs", Napi::Number::New(env, result.buildMs));
  timing.Set("sendMs", Napi::Number::New(env, result.sendMs));
  timing.Set("receiveMs", Napi::Number::New(env, result.receiveMs));
  timing.Set("buildCpuMs", Napi::Number::New(env, result.buildCpuMs));
  timing.Set("sendCpuMs", Napi::Number::New(env, result.sendCpuMs));
  timing.Set("waitMs", Napi::Number::New(env, result.waitMs));
  out.Set("timing", timing);
  return out;
}

// Rejects for a refused batch or a transport error, resolves otherwise (failures included).
void SettleCommit(Napi::Env env, Napi::Promise::Deferred& deferred, bool refused, const knp::InputError& inputError,
                  const knp::CommitResult& result, double parseMs) {
  if (refused) deferred.Reject(InputErrorToJs(env, "commit", inputError).Value());
  else if (!result.transportError.empty() && result.failures.empty())
    deferred.Reject(NetlinkError(env, result.transportError, result.transportErrno).Value());
  else deferred.Resolve(CommitResultToJs(env, result, parseMs));
}

// Batches from this size on are followed by malloc_trim (a 1k-service full sync is ~5 MB).
constexpr size_t kTrimAfterBytes = size_t(4) << 20;

// Checks and sends one batch on a worker thread, from the addon's own copy.
class CommitWorker : public Napi::AsyncWorker {
 public:
  CommitWorker(Napi::Env env, knp::BatchBytes batch, size_t size, bool pagesOwned, std::string netns)
      : Napi::AsyncWorker(env, "knp.commit"), deferred_(Napi::Promise::Deferred::New(env)), bytes_(std::move(batch)),
        size_(size), pagesOwned_(pagesOwned), netns_(std::move(netns)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    auto t0 = std::chrono::steady_clock::now();
    parsed_ = knp::ParseBatch(std::move(bytes_), size_, &batch_, &inputError_);
    parseMs_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    batch_.pagesOwned = pagesOwned_;
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

  void OnOK() override { SettleCommit(Env(), deferred_, !parsed_, inputError_, result_, parseMs_); }

  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  // The bytes, until ParseBatch takes them into batch_.
  knp::BatchBytes bytes_;
  size_t size_;
  bool pagesOwned_;
  std::string netns_;
  bool parsed_ = false;
  double parseMs_ = 0;
  knp::InputError inputError_;
  knp::Batch batch_;
  knp::CommitResult result_;
};

class ListWorker : public Napi::AsyncWorker {
 public:
  ListWorker(Napi::Env env, uint32_t family, std::string table, std::string netns, std::vector<std::string> skipElements)
      : Napi::AsyncWorker(env, "knp.list"), deferred_(Napi::Promise::Deferred::New(env)), family_(family),
        table_(std::move(table)), netns_(std::move(netns)), skipElements_(std::move(skipElements)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override { knp::ListTable(netns_, family_, table_, skipElements_, &result_); }

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
  std::vector<std::string> skipElements_;
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
  size_t size = 0;
  bool pagesOwned = false;
  knp::BatchBytes bytes = BatchArgument(info, "commit", &size, true, &pagesOwned);
  std::string netns = NetnsOption(info, 1);
  auto* worker = new CommitWorker(env, std::move(bytes), size, pagesOwned, std::move(netns));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

// Waits on a worker thread for a stream's pieces to be built, then sends them.
class StreamCommitWorker : public Napi::AsyncWorker {
 public:
  StreamCommitWorker(Napi::Env env, std::unique_ptr<knp::CommitStream> stream)
      : Napi::AsyncWorker(env, "knp.commitStream"), deferred_(Napi::Promise::Deferred::New(env)),
        stream_(std::move(stream)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override {
    stream_->Finish(&result_, &refused_, &inputError_, &parseMs_);
    stream_.reset();
    // As CommitWorker, after large ones: the messages were freed with the stream.
    if (result_.bytes >= kTrimAfterBytes) malloc_trim(0);
  }
  void OnOK() override { SettleCommit(Env(), deferred_, refused_, inputError_, result_, parseMs_); }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::unique_ptr<knp::CommitStream> stream_;
  knp::CommitResult result_;
  bool refused_ = false;
  knp::InputError inputError_;
  double parseMs_ = 0;
};

// new BatchStream(options?: { netns?: string }, expectedBytes?: number)
// One transaction from several batches (see commit-stream.h): push(batch)
// each as it is encoded, each taken or copied as commit() takes one; then
// commit(), which settles as commit() does, or abort(). A stream dropped
// unfinished is aborted.
class BatchStream : public Napi::ObjectWrap<BatchStream> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "BatchStream",
                       {
                           InstanceMethod<&BatchStream::Push>("push"),
                           InstanceMethod<&BatchStream::Cut>("cut"),
                           InstanceMethod<&BatchStream::Commit>("commit"),
                           InstanceMethod<&BatchStream::Abort>("abort"),
                       });
  }

  explicit BatchStream(const Napi::CallbackInfo& info) : Napi::ObjectWrap<BatchStream>(info) {
    std::string netns = NetnsOption(info, 0);
    double expected = 0;
    if (info.Length() > 1 && !info[1].IsUndefined()) {
      if (!info[1].IsNumber()) ThrowType(info.Env(), "BatchStream: expectedBytes must be a number");
      expected = info[1].As<Napi::Number>().DoubleValue();
      if (!(expected >= 0 && expected <= double(UINT32_MAX)))
        ThrowRange(info.Env(), "BatchStream: expectedBytes must be from 0 to 2^32-1", "ERR_INVALID_ARG_VALUE");
    }
    stream_ = std::make_unique<knp::CommitStream>(std::move(netns), size_t(expected));
  }

 private:
  knp::CommitStream& Open(Napi::Env env, const char* what) {
    if (!stream_) ThrowRange(env, std::string("BatchStream.") + what + ": the stream was committed or aborted", "ERR_NFT_STREAM_CLOSED");
    return *stream_;
  }

  Napi::Value Push(const Napi::CallbackInfo& info) {
    knp::CommitStream& stream = Open(info.Env(), "push");
    size_t size = 0;
    bool pagesOwned = false;
    knp::BatchBytes bytes = BatchArgument(info, "BatchStream.push", &size, true, &pagesOwned);
    stream.Push(std::move(bytes), size, pagesOwned);
    return info.Env().Undefined();
  }

  Napi::Value Cut(const Napi::CallbackInfo& info) {
    Open(info.Env(), "cut").Cut();
    return info.Env().Undefined();
  }

  Napi::Value Commit(const Napi::CallbackInfo& info) {
    Open(info.Env(), "commit");
    auto* worker = new StreamCommitWorker(info.Env(), std::move(stream_));
    Napi::Promise promise = worker->Promise();
    worker->Queue();
    return promise;
  }

  Napi::Value Abort(const Napi::CallbackInfo& info) {
    if (stream_) stream_->Abort();
    stream_.reset();
    return info.Env().Undefined();
  }

  std::unique_ptr<knp::CommitStream> stream_;
};

// check(batch: Uint8Array): { failures, messages, bytes }
// What commit does short of the kernel, synchronously on the JS thread: the
// allow-list (a malformed batch throws as commit rejects) and building every
// message through libnftnl (its refusals are failures, as commit's are).
Napi::Value Check(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  size_t size = 0;
  knp::BatchBytes bytes = BatchArgument(info, "check", &size, false);
  knp::Batch batch;
  knp::InputError error;
  if (!knp::ParseBatch(std::move(bytes), size, &batch, &error)) throw InputErrorToJs(env, "check", error);
  knp::BuiltBatch built;
  std::vector<knp::OperationFailure> failures;
  knp::BuildMessages(batch, 0, &built, &failures);
  Napi::Object out = Napi::Object::New(env);
  out.Set("failures", FailuresToJs(env, failures));
  out.Set("messages", Napi::Number::New(env, double(failures.empty() ? built.messages.size() : 0)));
  out.Set("bytes", Napi::Number::New(env, double(failures.empty() ? built.buffer.size() : 0)));
  return out;
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
  // Sets whose elements are not read (their definitions are): the kernel's dump of a set's
  // elements walks the set again for every message it fills, so it is quadratic in its size.
  std::vector<std::string> skipElements;
  if (info.Length() > 3 && !info[3].IsUndefined()) {
    if (!info[3].IsArray()) ThrowType(env, "list: skipElementsOf must be an array of set names");
    Napi::Array names = info[3].As<Napi::Array>();
    for (uint32_t i = 0; i < names.Length(); i++) {
      Napi::Value name = names.Get(i);
      if (!name.IsString()) ThrowType(env, "list: skipElementsOf must be an array of set names");
      skipElements.push_back(name.As<Napi::String>().Utf8Value());
    }
  }
  auto* worker = new ListWorker(env, uint32_t(family), std::move(table), std::move(netns), std::move(skipElements));
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

// exitWatchdog(code, ms): ends the process with _exit(code) unless it has
// ended within ms; for the moment before process.exit(code). Node can
// deadlock in process.exit() (nodejs/node#54918): its main thread joins the
// platform's worker threads while one of them, compiling, waits for the main
// thread to collect garbage. The thread runs on its own, so it also ends a
// process whose JS thread is stuck.
Napi::Value ExitWatchdog(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber()) {
    Napi::TypeError::New(env, "exitWatchdog(code, ms) takes two numbers").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  int code = info[0].As<Napi::Number>().Int32Value();
  uint32_t ms = info[1].As<Napi::Number>().Uint32Value();
  std::thread([code, ms] {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    _exit(code);
  }).detach();
  return env.Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("commit", Napi::Function::New(env, Commit, "commit"));
  exports.Set("check", Napi::Function::New(env, Check, "check"));
  exports.Set("list", Napi::Function::New(env, List, "list"));
  exports.Set("generation", Napi::Function::New(env, Generation, "generation"));
  exports.Set("trimMemory", Napi::Function::New(env, TrimMemory, "trimMemory"));
  exports.Set("exitWatchdog", Napi::Function::New(env, ExitWatchdog, "exitWatchdog"));
  exports.Set("allocateBatch", Napi::Function::New(env, AllocateBatch, "allocateBatch"));
  exports.Set("BatchStream", BatchStream::Define(env));
  exports.Set("elementsPerMessage", Napi::Number::New(env, knp::kElementsPerMessage));
  InitLinkMonitor(env, exports);
  InitConntrack(env, exports);
  InitTableInfo(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(kube_nft_proxy, Init)
