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

Napi::Object RecordToJs(Napi::Env env, const knp::LinkRecord& rec) {
  Napi::Object obj = Napi::Object::New(env);
  obj.Set("index", Napi::Number::New(env, rec.index));
  obj.Set("name", Napi::String::New(env, rec.name));
  obj.Set("flags", Napi::Number::New(env, rec.flags));
  obj.Set("kind", Napi::String::New(env, rec.kind));
  obj.Set("mtu", Napi::Number::New(env, rec.mtu));
  obj.Set("operState", Napi::Number::New(env, rec.operState));
  obj.Set("master", Napi::Number::New(env, rec.master));
  return obj;
}

Napi::Object BatchToJs(Napi::Env env, const knp::LinkBatch& batch) {
  Napi::Object obj = Napi::Object::New(env);
  if (batch.resync != knp::ResyncReason::kNone) {
    obj.Set("resync", Napi::String::New(env, ReasonName(batch.resync)));
    Napi::Array links = Napi::Array::New(env, batch.snapshot.size());
    for (size_t i = 0; i < batch.snapshot.size(); ++i) links.Set(i, RecordToJs(env, batch.snapshot[i]));
    obj.Set("links", links);
  }
  Napi::Array changes = Napi::Array::New(env, batch.changes.size());
  for (size_t i = 0; i < batch.changes.size(); ++i) {
    Napi::Object change = Napi::Object::New(env);
    change.Set("removed", Napi::Boolean::New(env, batch.changes[i].removed));
    change.Set("link", RecordToJs(env, batch.changes[i].link));
    changes.Set(i, change);
  }
  obj.Set("changes", changes);
  return obj;
}

// A subscriber that throws is an uncaught exception of the program, reported
// the way Node reports one from any event source.
void CallReporting(Napi::Env env, Napi::Function fn, Napi::Value arg) {
  try {
    fn.Call({arg});
  } catch (const Napi::Error& e) {
    napi_fatal_exception(env, e.Value());
  }
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
  Napi::Env env(rawEnv);
  try {
    Napi::HandleScope scope(env);
    if (session->unrefAfterSnapshot && delivery->batch.resync != knp::ResyncReason::kNone) {
      session->unrefAfterSnapshot = false;
      napi_unref_threadsafe_function(rawEnv, session->tsfn);
    }
    if (!delivery->batch.Empty()) {
      CallReporting(env, Napi::Function(rawEnv, jsCallback), BatchToJs(env, delivery->batch));
      if (session->stopped) return;  // the callback stopped the monitor
    }
    if (delivery->failed) {
      Napi::Function onError = session->onError.Value();
      Napi::Error error =
          ErrorWithCode(env, "LinkMonitor: " + delivery->error, "ERR_LINK_MONITOR_SOCKET", delivery->err);
      if (session->owner != nullptr) session->owner->Release();
      CallReporting(env, onError, error.Value());
    }
  } catch (const Napi::Error&) {
    // Building the arguments failed: the environment is shutting down and can
    // no longer run JS (queued deliveries still arrive then). Nothing to tell.
  }
}

}  // namespace

Napi::Object InitLinkMonitor(Napi::Env env, Napi::Object exports) {
  exports.Set("LinkMonitor", LinkMonitor::Define(env));
  return exports;
}
