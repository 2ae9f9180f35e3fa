// LinkMonitor: one rtnetlink socket per started monitor, read by a dedicated
// thread that blocks in poll() and hands each batch to JS through a
// thread-safe function. Only the JS thread touches the napi_env; the reader
// thread touches only its socket, an eventfd and the thread-safe function.
// (A uv_poll handle would avoid the thread, but uv.h is not part of Node-API
// and the cmake-js build compiles against node-api-headers only.)
//
// Lifetime (the choice, documented for src/links/link-monitor.ts):
// - While started, the JS object holds a strong reference to itself, so a
//   running monitor is never collected behind its subscribers' backs; stop()
//   drops it. A monitor that was never started (or was stopped) is weak and its
//   finalizer releases whatever is left.
// - Once the initial dump is delivered, the thread-safe function is unref'd
//   unless the caller asked for keepAlive: watching links is observation, like
//   an unref'd timer, and must not by itself keep alive a process that has
//   nothing else to do. Until then it holds the loop, so that awaiting the
//   first state works even in a process (or worker) with nothing else to do.
// - An env cleanup hook stops the monitor when the environment (process or
//   worker) shuts down; the reader thread is always joined before the state it
//   uses is freed.
#include "link-monitor.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "netlink/rtnetlink.h"

namespace {

// Datagrams per batch: bounds one delivery (a dump skb is at most 32 KiB).
constexpr int kReadsPerBatch = 64;
// The kernel doubles SO_RCVBUF requests and keeps them in an int.
constexpr int64_t kMaxReceiveBuffer = INT_MAX / 2;

Napi::Error ErrorWithCode(Napi::Env env, const std::string& message, const char* code, int err = 0) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  if (err != 0) error.Set("errno", Napi::Number::New(env, err));
  return error;
}

Napi::Error TypeErrorWithCode(Napi::Env env, const std::string& message, const char* code) {
  Napi::TypeError error = Napi::TypeError::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  return error;
}

const char* ReasonName(knp::ResyncReason reason) {
  switch (reason) {
    case knp::ResyncReason::kInitial: return "initial";
    case knp::ResyncReason::kOverrun: return "overrun";
    case knp::ResyncReason::kInterrupted: return "interrupted";
    case knp::ResyncReason::kNone: break;
  }
  return "none";
}

// What a delivery builds and calls in JS, with Node-API's own calls, each
// status checked. A worker being terminated still runs the calls queued for
// it, but can no longer run JS: its calls fail, and node-addon-api, making an
// Error of a failed call, aborts the process there (napi_define_properties
// fails in Error's constructor). A delivery that cannot be made is dropped.
class JsBuilder {
 public:
  explicit JsBuilder(napi_env env) : env_(env) {}
  bool ok() const { return ok_; }

  napi_value Object() { return Make([&](napi_value* v) { return napi_create_object(env_, v); }); }
  napi_value Array(size_t n) { return Make([&](napi_value* v) { return napi_create_array_with_length(env_, n, v); }); }
  napi_value Number(double d) { return Make([&](napi_value* v) { return napi_create_double(env_, d, v); }); }
  napi_value Bool(bool b) { return Make([&](napi_value* v) { return napi_get_boolean(env_, b, v); }); }
  napi_value String(const std::string& s) {
    return Make([&](napi_value* v) { return napi_create_string_utf8(env_, s.data(), s.size(), v); });
  }
  void Set(napi_value obj, const char* key, napi_value value) {
    if (ok_) Check(napi_set_named_property(env_, obj, key, value));
  }
  void SetAt(napi_value array, uint32_t i, napi_value value) {
    if (ok_) Check(napi_set_element(env_, array, i, value));
  }
  // An Error with `code` (and `errno` when not 0), as ErrorWithCode makes them.
  napi_value Error(const std::string& message, const char* code, int err) {
    napi_value codeValue = String(code);
    napi_value messageValue = String(message);
    napi_value error = Make([&](napi_value* v) { return napi_create_error(env_, codeValue, messageValue, v); });
    if (err != 0) Set(error, "errno", Number(err));
    return error;
  }

 private:
  template <typename F>
  napi_value Make(F make) {
    napi_value v = nullptr;
    if (ok_) Check(make(&v));
    return ok_ ? v : nullptr;
  }
  void Check(napi_status status) {
    if (status != napi_ok) ok_ = false;
  }

  napi_env env_;
  bool ok_ = true;
};

napi_value RecordToJs(JsBuilder& js, const knp::LinkRecord& rec) {
  napi_value obj = js.Object();
  js.Set(obj, "index", js.Number(rec.index));
  js.Set(obj, "name", js.String(rec.name));
  js.Set(obj, "flags", js.Number(rec.flags));
  js.Set(obj, "kind", js.String(rec.kind));
  js.Set(obj, "mtu", js.Number(rec.mtu));
  js.Set(obj, "operState", js.Number(rec.operState));
  js.Set(obj, "master", js.Number(rec.master));
  return obj;
}

napi_value BatchToJs(JsBuilder& js, const knp::LinkBatch& batch) {
  napi_value obj = js.Object();
  if (batch.resync != knp::ResyncReason::kNone) {
    js.Set(obj, "resync", js.String(ReasonName(batch.resync)));
    napi_value links = js.Array(batch.snapshot.size());
    for (size_t i = 0; i < batch.snapshot.size() && js.ok(); ++i) {
      js.SetAt(links, uint32_t(i), RecordToJs(js, batch.snapshot[i]));
    }
    js.Set(obj, "links", links);
  }
  napi_value changes = js.Array(batch.changes.size());
  for (size_t i = 0; i < batch.changes.size() && js.ok(); ++i) {
    napi_value change = js.Object();
    js.Set(change, "removed", js.Bool(batch.changes[i].removed));
    js.Set(change, "link", RecordToJs(js, batch.changes[i].link));
    js.SetAt(changes, uint32_t(i), change);
  }
  js.Set(obj, "changes", changes);
  return obj;
}

// Calls fn(arg). A subscriber that throws is an uncaught exception of the
// program, reported the way Node reports one from any event source; a call
// the environment can no longer make (a worker being terminated) is dropped.
void CallReporting(napi_env env, napi_value fn, napi_value arg) {
  napi_value global = nullptr;
  napi_value result = nullptr;
  if (napi_get_global(env, &global) != napi_ok) return;
  if (napi_call_function(env, global, fn, 1, &arg, &result) == napi_ok) return;
  bool pending = false;
  napi_value error = nullptr;
  if (napi_is_exception_pending(env, &pending) != napi_ok || !pending) return;
  if (napi_get_and_clear_last_exception(env, &error) != napi_ok) return;
  // What a terminated call leaves is no exception of the program's.
  JsBuilder probe(env);
  probe.Set(probe.Object(), "probe", error);
  if (probe.ok()) napi_fatal_exception(env, error);
}

class LinkMonitor;

// What the reader thread has for JS: the batches since the last delivery,
// merged, and the error that ended the reader, if one did.
struct Delivery {
  knp::LinkBatch batch;
  bool failed = false;
  std::string error;
  int err = 0;
};

// The state of one start(): owned by the thread-safe function, freed by its
// finalizer on the JS thread once no delivery can be pending.
struct Session {
  std::unique_ptr<knp::RtnlLinkSocket> socket;
  int wakeFd = -1;
  std::thread reader;
  std::atomic<bool> stopping{false};
  napi_threadsafe_function tsfn = nullptr;
  Napi::FunctionReference onError;
  // Shared with the reader. At most one call is queued at a time; whatever the
  // reader reads meanwhile joins `pending`, so a busy JS thread gets fewer,
  // bigger batches instead of a growing queue of small ones.
  std::mutex mutex;
  Delivery pending;
  bool callQueued = false;
  // JS thread only: set when the monitor let go of this session; deliveries
  // still queued are then dropped.
  bool stopped = false;
  bool unrefAfterSnapshot = false;
  LinkMonitor* owner = nullptr;

  ~Session() {
    StopReader();
    if (wakeFd >= 0) close(wakeFd);
  }

  void StopReader() {
    stopping.store(true);
    if (wakeFd >= 0) {
      uint64_t one = 1;
      ssize_t ignored = write(wakeFd, &one, sizeof one);
      (void)ignored;
    }
    if (reader.joinable()) reader.join();
  }

  void Run() {
    bool moreWaiting = false;
    while (!stopping.load()) {
      // A drain that ran out of budget may have left only a wanted re-dump to
      // send, which no poll would ever announce: drain again without waiting.
      if (!moreWaiting) {
        pollfd fds[2] = {{socket->fd(), POLLIN, 0}, {wakeFd, POLLIN, 0}};
        int n = poll(fds, 2, -1);
        if (n < 0) {
          if (errno == EINTR) continue;
          Delivery d;
          d.failed = true;
          d.err = errno;
          d.error = std::string("poll: ") + strerror(errno);
          Post(std::move(d));
          return;
        }
        if (fds[1].revents != 0) return;
        if (fds[0].revents == 0) continue;
      }
      Delivery d;
      auto result = socket->Drain(kReadsPerBatch, &d.batch, &d.error, &d.err);
      d.failed = result == knp::RtnlLinkSocket::DrainResult::kFailed;
      if ((d.failed || !d.batch.Empty()) && !Post(std::move(d))) return;
      if (result == knp::RtnlLinkSocket::DrainResult::kFailed) return;
      moreWaiting = result == knp::RtnlLinkSocket::DrainResult::kBudgetExhausted;
    }
  }

  // False when the thread-safe function is closing: the reader must stop.
  bool Post(Delivery d) {
    std::lock_guard<std::mutex> lock(mutex);
    knp::AppendBatch(&pending.batch, std::move(d.batch));
    if (d.failed) {
      pending.failed = true;
      pending.error = std::move(d.error);
      pending.err = d.err;
    }
    if (callQueued) return true;
    if (napi_call_threadsafe_function(tsfn, nullptr, napi_tsfn_nonblocking) != napi_ok) return false;
    callQueued = true;
    return true;
  }

  static void CallJs(napi_env rawEnv, napi_value jsCallback, void* context, void* data);
  static void Finalize(napi_env, void* data, void*) { delete static_cast<Session*>(data); }
};

class LinkMonitor : public Napi::ObjectWrap<LinkMonitor> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "LinkMonitor",
                       {
                           InstanceMethod<&LinkMonitor::Start>("start"),
                           InstanceMethod<&LinkMonitor::Stop>("stop"),
                           InstanceMethod<&LinkMonitor::Stats>("stats"),
                           InstanceAccessor<&LinkMonitor::Running>("running"),
                       });
  }

  explicit LinkMonitor(const Napi::CallbackInfo& info) : Napi::ObjectWrap<LinkMonitor>(info), env_(info.Env()) {
    Napi::Env env = info.Env();
    Napi::Object options = Napi::Object::New(env);
    if (info.Length() > 0 && !info[0].IsUndefined()) {
      if (!info[0].IsObject() || info[0].IsArray() || info[0].IsFunction())
        throw TypeErrorWithCode(env, "LinkMonitor options must be an object", "ERR_INVALID_ARG_TYPE");
      options = info[0].As<Napi::Object>();
    }
    Napi::Value netns = options.Get("netns");
    if (!netns.IsUndefined()) {
      if (!netns.IsString())
        throw TypeErrorWithCode(env, "LinkMonitor options.netns must be a string", "ERR_INVALID_ARG_TYPE");
      netns_ = netns.As<Napi::String>().Utf8Value();
      if (netns_.empty() || netns_.size() >= PATH_MAX || netns_.find('\0') != std::string::npos)
        throw TypeErrorWithCode(env,
                                "LinkMonitor options.netns must be a non-empty path without NUL bytes, under " +
                                    std::to_string(PATH_MAX) + " bytes",
                                "ERR_INVALID_ARG_VALUE");
    }
    Napi::Value rcvbuf = options.Get("receiveBufferBytes");
    if (!rcvbuf.IsUndefined()) {
      if (!rcvbuf.IsNumber())
        throw TypeErrorWithCode(env, "LinkMonitor options.receiveBufferBytes must be a number", "ERR_INVALID_ARG_TYPE");
      double value = rcvbuf.As<Napi::Number>().DoubleValue();
      // The comparisons are false for NaN, so NaN fails too.
      if (!(value >= 0 && value <= static_cast<double>(kMaxReceiveBuffer)) ||
          value != static_cast<double>(static_cast<int64_t>(value)))
        throw TypeErrorWithCode(env,
                                "LinkMonitor options.receiveBufferBytes must be an integer from 0 to " +
                                    std::to_string(kMaxReceiveBuffer),
                                "ERR_INVALID_ARG_VALUE");
      receiveBufferBytes_ = static_cast<int>(value);
    }
    Napi::Value keepAlive = options.Get("keepAlive");
    if (!keepAlive.IsUndefined()) {
      if (!keepAlive.IsBoolean())
        throw TypeErrorWithCode(env, "LinkMonitor options.keepAlive must be a boolean", "ERR_INVALID_ARG_TYPE");
      keepAlive_ = keepAlive.As<Napi::Boolean>().Value();
    }
    if (napi_add_env_cleanup_hook(env_, &LinkMonitor::OnEnvCleanup, this) == napi_ok) cleanupHookAdded_ = true;
  }

  ~LinkMonitor() override {
    Release();
    if (cleanupHookAdded_) napi_remove_env_cleanup_hook(env_, &LinkMonitor::OnEnvCleanup, this);
  }

  // Lets go of the running session: the reader thread is stopped and joined,
  // the socket closed, queued deliveries dropped. Idempotent.
  void Release() {
    if (session_ == nullptr) return;
    Session* session = session_;
    session_ = nullptr;
    session->stopped = true;
    session->owner = nullptr;
    session->StopReader();
    lastOverruns_ = session->socket->overruns();
    lastDumps_ = session->socket->dumps();
    lastStalledDumps_ = session->socket->stalledDumps();
    session->socket.reset();
    // The finalizer (after the queue drains) frees the session.
    napi_release_threadsafe_function(session->tsfn, napi_tsfn_release);
    // Raw calls: this also runs from the env cleanup hook and from the
    // finalizer, where a throwing wrapper would terminate the process.
    if (selfRef_ != nullptr) {
      napi_delete_reference(env_, selfRef_);
      selfRef_ = nullptr;
    }
  }

 private:
  // start(onBatch, onError): opens the socket, requests the dump, starts the reader.
  void Start(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsFunction() || !info[1].IsFunction())
      throw TypeErrorWithCode(env, "LinkMonitor.start(onBatch, onError) takes two functions", "ERR_INVALID_ARG_TYPE");
    if (session_ != nullptr) throw ErrorWithCode(env, "LinkMonitor is already running", "ERR_LINK_MONITOR_RUNNING");
    if (envGone_) throw ErrorWithCode(env, "LinkMonitor's environment is shutting down", "ERR_LINK_MONITOR_STOPPED");

    std::string error;
    int err = 0;
    auto socket =
        knp::RtnlLinkSocket::Open(netns_.empty() ? nullptr : netns_.c_str(), receiveBufferBytes_, &error, &err);
    if (!socket) throw ErrorWithCode(env, "LinkMonitor: " + error, "ERR_LINK_MONITOR_OPEN", err);
    if (!socket->Start(&error, &err)) throw ErrorWithCode(env, "LinkMonitor: " + error, "ERR_LINK_MONITOR_OPEN", err);
    int wakeFd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wakeFd < 0) throw ErrorWithCode(env, std::string("LinkMonitor: eventfd: ") + strerror(errno),
                                        "ERR_LINK_MONITOR_OPEN", errno);

    auto session = std::make_unique<Session>();
    session->socket = std::move(socket);
    session->wakeFd = wakeFd;
    session->onError = Napi::Persistent(info[1].As<Napi::Function>());
    session->owner = this;
    napi_status status = napi_create_threadsafe_function(
        env, info[0], nullptr, Napi::String::New(env, "KnpLinkMonitor"), 0, 1, session.get(), &Session::Finalize,
        session.get(), &Session::CallJs, &session->tsfn);
    if (status != napi_ok) throw ErrorWithCode(env, "LinkMonitor: cannot create a thread-safe function",
                                               "ERR_LINK_MONITOR_OPEN");
    // From here the finalizer owns the session.
    Session* s = session.release();
    s->unrefAfterSnapshot = !keepAlive_;
    try {
      s->reader = std::thread([s] { s->Run(); });
    } catch (const std::system_error& e) {
      s->stopped = true;
      s->socket.reset();
      napi_release_threadsafe_function(s->tsfn, napi_tsfn_release);
      throw ErrorWithCode(env, std::string("LinkMonitor: cannot start the reader thread: ") + e.what(),
                          "ERR_LINK_MONITOR_OPEN", e.code().value());
    }
    session_ = s;
    napi_create_reference(env, Value(), 1, &selfRef_);
  }

  void Stop(const Napi::CallbackInfo&) { Release(); }

  Napi::Value Running(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), session_ != nullptr); }

  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Object stats = Napi::Object::New(env);
    const knp::RtnlLinkSocket* socket = session_ ? session_->socket.get() : nullptr;
    stats.Set("overruns", Napi::Number::New(env, static_cast<double>(socket ? socket->overruns() : lastOverruns_)));
    stats.Set("dumps", Napi::Number::New(env, static_cast<double>(socket ? socket->dumps() : lastDumps_)));
    stats.Set("stalledDumps",
              Napi::Number::New(env, static_cast<double>(socket ? socket->stalledDumps() : lastStalledDumps_)));
    stats.Set("receiveBufferBytes", Napi::Number::New(env, socket ? socket->receiveBufferBytes() : 0));
    return stats;
  }

  static void OnEnvCleanup(void* arg) {
    auto* self = static_cast<LinkMonitor*>(arg);
    self->cleanupHookAdded_ = false;
    self->envGone_ = true;
    self->Release();
  }

  napi_env env_;
  std::string netns_;
  int receiveBufferBytes_ = 0;
  bool keepAlive_ = false;
  napi_ref selfRef_ = nullptr;  // strong while started
  bool cleanupHookAdded_ = false;
  bool envGone_ = false;
  uint64_t lastOverruns_ = 0;
  uint64_t lastDumps_ = 0;
  uint64_t lastStalledDumps_ = 0;
  Session* session_ = nullptr;
};

void Session::CallJs(napi_env rawEnv, napi_value jsCallback, void* context, void* data) {
  auto* session = static_cast<Session*>(context);
  // A null env: the function is being torn down (there is no data to free).
  if (rawEnv == nullptr || session->stopped) return;
  auto delivery = std::make_unique<Delivery>();
  {
    std::lock_guard<std::mutex> lock(session->mutex);
    std::swap(*delivery, session->pending);
    session->callQueued = false;
  }
  napi_handle_scope scope = nullptr;
  if (napi_open_handle_scope(rawEnv, &scope) != napi_ok) return;
  if (session->unrefAfterSnapshot && delivery->batch.resync != knp::ResyncReason::kNone) {
    session->unrefAfterSnapshot = false;
    napi_unref_threadsafe_function(rawEnv, session->tsfn);
  }
  JsBuilder js(rawEnv);
  if (!delivery->batch.Empty()) {
    napi_value batch = BatchToJs(js, delivery->batch);
    if (js.ok()) CallReporting(rawEnv, jsCallback, batch);
  }
  // Not when the callback stopped the monitor, nor when the environment can no longer run JS.
  if (delivery->failed && !session->stopped && js.ok()) {
    napi_value onError = nullptr;
    napi_value error = js.Error("LinkMonitor: " + delivery->error, "ERR_LINK_MONITOR_SOCKET", delivery->err);
    bool ready = js.ok() && napi_get_reference_value(rawEnv, session->onError, &onError) == napi_ok && onError != nullptr;
    if (session->owner != nullptr) session->owner->Release();
    if (ready) CallReporting(rawEnv, onError, error);
  }
  napi_close_handle_scope(rawEnv, scope);
}

}  // namespace

Napi::Object InitLinkMonitor(Napi::Env env, Napi::Object exports) {
  exports.Set("LinkMonitor", LinkMonitor::Define(env));
  return exports;
}
