// Turnkeeper's launcher addon: the Node-API surface, the same on every platform. JavaScript
// (src/launcher/) owns policy, hashing and receipts; the platform backend (backend.h: linux_spawn.cc,
// or unsupported.cc) owns opening the executable once and starting the child suspended at its exec
// boundary. This file owns what is platform-neutral: converting values, the registry of parked
// launches and their decisions, and the thread-safe function that carries events back.
//
// State lives per environment (napi_set_instance_data), not in process globals: a worker thread or a
// reloaded extension host that loads the addon gets its own registry, and its teardown kills only its
// own undecided launches.
#include <napi.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "backend.h"

namespace {

using turnkeeper::Decision;
using turnkeeper::FileStat;
using turnkeeper::LaunchEvent;

Napi::Object StatObject(Napi::Env env, const FileStat& st) {
  Napi::Object out = Napi::Object::New(env);
  // dev and ino can exceed 2^53: decimal strings keep them exact and JSON-friendly.
  out.Set("dev", std::to_string(st.dev));
  out.Set("ino", std::to_string(st.ino));
  out.Set("size", Napi::Number::New(env, st.size));
  out.Set("mode", Napi::Number::New(env, st.mode));
  out.Set("nlink", Napi::Number::New(env, st.nlink));
  out.Set("uid", Napi::Number::New(env, st.uid));
  out.Set("mtimeNs", std::to_string(st.mtimeNs));
  out.Set("ctimeNs", std::to_string(st.ctimeNs));
  return out;
}

// Hold: JavaScript is committing the receipt and has taken over the deadline (its store has its own
// timeout); the backstop timer then no longer fires, so a receipt is never written for a child the
// timer already killed.
struct Launch : turnkeeper::LaunchChannel {
  uint32_t id = 0;
  std::mutex mutex;
  std::condition_variable changed;
  Decision decision = Decision::None;
  std::string killReason;
  bool parked = false;
  bool finished = false;
  Napi::ThreadSafeFunction tsfn;
  // Whether this launch thread may still touch tsfn. When the environment is torn down (a worker
  // exits) Node finalizes and frees the function: a call then returns napi_closing, and any later
  // call, Release included, would touch freed memory. The finalizer and every call hold tsfnMutex.
  std::mutex tsfnMutex;
  bool tsfnOpen = true;

  void CloseFromFinalizer() {
    std::lock_guard<std::mutex> lock(tsfnMutex);
    tsfnOpen = false;
  }

  void ReleaseEvents() {
    std::lock_guard<std::mutex> lock(tsfnMutex);
    if (!tsfnOpen) return;
    tsfnOpen = false;
    tsfn.Release();
  }

  void Emit(LaunchEvent* event) override {
    std::lock_guard<std::mutex> guard(tsfnMutex);
    if (!tsfnOpen) {
      delete event;
      return;
    }
    napi_status status = tsfn.BlockingCall(event, [](Napi::Env env, Napi::Function callback,
                                                     LaunchEvent* data) {
      // The environment is being torn down (a worker exits): nothing left to tell, only memory to
      // free. Making a JavaScript value here would throw inside the teardown and abort the process.
      if (static_cast<napi_env>(env) == nullptr || callback.IsEmpty()) {
        delete data;
        return;
      }
      Napi::Object out = Napi::Object::New(env);
      out.Set("type", data->type);
      out.Set("pid", Napi::Number::New(env, static_cast<double>(data->pid)));
      if (!data->reason.empty()) out.Set("reason", data->reason);
      if (!data->detail.empty()) out.Set("detail", data->detail);
      if (data->hasExe) out.Set("exe", StatObject(env, data->exe));
      if (data->type == "exit") {
        out.Set("code", data->code >= 0 ? Napi::Value(Napi::Number::New(env, data->code)) : env.Null());
        out.Set("signal", data->signal > 0 ? Napi::Value(Napi::Number::New(env, data->signal)) : env.Null());
      }
      delete data;
      callback.Call({out});
    });
    if (status != napi_ok) {
      // Closing: the event was not queued, and the function must not be used again.
      tsfnOpen = false;
      delete event;
    }
  }

  void MarkParked() override {
    std::lock_guard<std::mutex> lock(mutex);
    parked = true;
  }

  std::pair<Decision, std::string> AwaitDecision(unsigned timeoutMs) override {
    std::unique_lock<std::mutex> lock(mutex);
    auto final = [&] { return decision == Decision::Detach || decision == Decision::Kill; };
    bool decided = changed.wait_for(lock, std::chrono::milliseconds(timeoutMs), final);
    if (!decided && decision == Decision::Hold) {
      // Held: wait for the verdict, with a generous last-resort bound against a wedged caller.
      decided = changed.wait_for(lock, std::chrono::minutes(10), final);
    }
    if (!decided) {
      decision = Decision::Kill;
      killReason = "launch_timeout";
    }
    parked = false;
    return {decision, killReason};
  }
};

// One environment's launches. Shared with each launch thread, so it outlives the environment's
// teardown until the last thread has finished.
struct Registry {
  std::mutex mutex;
  std::map<uint32_t, std::shared_ptr<Launch>> launches;
  uint32_t nextId = 1;

  std::shared_ptr<Launch> Find(uint32_t id) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = launches.find(id);
    return it == launches.end() ? nullptr : it->second;
  }

  // When the environment goes away (worker exit, extension host reload), no parked child of it may
  // outlive it as a runnable agent: its undecided launches are killed.
  void KillUndecided() {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& [id, launch] : launches) {
      std::lock_guard<std::mutex> guard(launch->mutex);
      if (launch->decision == Decision::None || launch->decision == Decision::Hold) {
        launch->decision = Decision::Kill;
        launch->killReason = "launch_verification_failed";
        launch->changed.notify_all();
      }
    }
  }
};

// The instance data of one environment.
struct AddonState {
  std::shared_ptr<Registry> registry = std::make_shared<Registry>();
};

// The environment is being torn down: kill what it left undecided, then drop its handle on the registry.
void FinalizeState(Napi::Env, AddonState* state) {
  state->registry->KillUndecided();
  delete state;
}

std::shared_ptr<Registry> RegistryOf(Napi::Env env) { return env.GetInstanceData<AddonState>()->registry; }

Napi::Value OpenExecutable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  turnkeeper::OpenOutcome opened = turnkeeper::OpenExecutable(info[0].As<Napi::String>());
  Napi::Object out = Napi::Object::New(env);
  out.Set("ok", opened.ok);
  if (!opened.ok) {
    out.Set("reason", opened.reason);
    out.Set("detail", opened.detail);
    return out;
  }
  Napi::Array chain = Napi::Array::New(env);
  for (uint32_t i = 0; i < opened.chain.size(); i++) {
    Napi::Object hop = Napi::Object::New(env);
    hop.Set("path", opened.chain[i].path);
    if (opened.chain[i].link) hop.Set("target", opened.chain[i].target);
    chain.Set(i, hop);
  }
  out.Set("fd", opened.fd);
  out.Set("chain", chain);
  out.Set("resolved", opened.resolved);
  out.Set("stat", StatObject(env, opened.stat));
  return out;
}

Napi::Value FstatFd(const Napi::CallbackInfo& info) {
  FileStat st;
  if (!turnkeeper::FstatFd(info[0].As<Napi::Number>().Int32Value(), &st)) return info.Env().Null();
  return StatObject(info.Env(), st);
}

Napi::Value StatPath(const Napi::CallbackInfo& info) {
  FileStat st;
  if (!turnkeeper::StatPath(info[0].As<Napi::String>(), &st)) return info.Env().Null();
  return StatObject(info.Env(), st);
}

// peerUid(fd) -> uid of the connected peer, or null when the platform cannot say.
Napi::Value PeerUid(const Napi::CallbackInfo& info) {
  uint32_t uid = 0;
  if (!turnkeeper::PeerUid(info[0].As<Napi::Number>().Int32Value(), &uid)) return info.Env().Null();
  return Napi::Number::New(info.Env(), uid);
}

Napi::Value CloseFd(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), turnkeeper::CloseFd(info[0].As<Napi::Number>().Int32Value()));
}

// spawnParked({fd, argv, env, cwd, stdio, cols, rows, timeoutMs}, onEvent)
//   -> {id, stdin?, stdout?, stderr?, pty?}
Napi::Value SpawnParked(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object options = info[0].As<Napi::Object>();
  Napi::Function onEvent = info[1].As<Napi::Function>();
  turnkeeper::SpawnRequest request;
  request.execFd = options.Get("fd").As<Napi::Number>().Int32Value();
  Napi::Array argv = options.Get("argv").As<Napi::Array>();
  for (uint32_t i = 0; i < argv.Length(); i++) request.argv.push_back(argv.Get(i).As<Napi::String>());
  Napi::Array envp = options.Get("env").As<Napi::Array>();
  for (uint32_t i = 0; i < envp.Length(); i++) request.envp.push_back(envp.Get(i).As<Napi::String>());
  request.cwd = options.Get("cwd").As<Napi::String>();
  request.stdio = options.Get("stdio").As<Napi::String>();
  request.cols = options.Get("cols").As<Napi::Number>().Uint32Value();
  request.rows = options.Get("rows").As<Napi::Number>().Uint32Value();
  request.timeoutMs = options.Get("timeoutMs").As<Napi::Number>().Uint32Value();

  turnkeeper::SpawnHandles handles;
  std::shared_ptr<turnkeeper::PreparedSpawn> prepared;
  try {
    prepared = turnkeeper::PrepareSpawn(request, &handles);
  } catch (const std::exception& error) {
    throw Napi::Error::New(env, error.what());
  }
  Napi::Object result = Napi::Object::New(env);
  if (handles.in >= 0) result.Set("stdin", handles.in);
  if (handles.out >= 0) result.Set("stdout", handles.out);
  if (handles.err >= 0) result.Set("stderr", handles.err);
  if (handles.pty >= 0) result.Set("pty", handles.pty);

  std::shared_ptr<Registry> registry = RegistryOf(env);
  auto launch = std::make_shared<Launch>();
  {
    std::lock_guard<std::mutex> lock(registry->mutex);
    launch->id = registry->nextId++;
    registry->launches[launch->id] = launch;
  }
  launch->tsfn = Napi::ThreadSafeFunction::New(env, onEvent, "turnkeeper-launch", 0, 1,
                                               [launch](Napi::Env) { launch->CloseFromFinalizer(); });
  std::thread([launch, prepared, registry] {
    turnkeeper::RunSpawn(prepared, *launch);
    {
      std::lock_guard<std::mutex> lock(launch->mutex);
      launch->finished = true;
    }
    launch->ReleaseEvents();
    std::lock_guard<std::mutex> lock(registry->mutex);
    registry->launches.erase(launch->id);
  }).detach();
  result.Set("id", launch->id);
  return result;
}

// decide(id, "hold" | "detach" | "kill", reason): true only if the launch is parked and not yet
// decided (hold may precede detach or kill), so a second commit, or a commit after a cancel or a
// timeout, is refused rather than acted on.
Napi::Value Decide(const Napi::CallbackInfo& info) {
  auto launch = RegistryOf(info.Env())->Find(info[0].As<Napi::Number>().Uint32Value());
  std::string what = info[1].As<Napi::String>();
  std::string reason = info.Length() > 2 ? std::string(info[2].As<Napi::String>()) : "";
  if (!launch) return Napi::Boolean::New(info.Env(), false);
  std::lock_guard<std::mutex> lock(launch->mutex);
  bool open = launch->decision == Decision::None || (launch->decision == Decision::Hold && what != "hold");
  if (!launch->parked || !open) return Napi::Boolean::New(info.Env(), false);
  launch->decision = what == "hold" ? Decision::Hold : what == "detach" ? Decision::Detach : Decision::Kill;
  launch->killReason = reason;
  launch->changed.notify_all();
  return Napi::Boolean::New(info.Env(), true);
}

Napi::Value ResizePty(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), turnkeeper::ResizePty(info[0].As<Napi::Number>().Int32Value(),
                                                              info[1].As<Napi::Number>().Uint32Value(),
                                                              info[2].As<Napi::Number>().Uint32Value()));
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  // The environment's state; its finalizer runs at the environment's teardown.
  env.SetInstanceData<AddonState, FinalizeState>(new AddonState());
  exports.Set("openExecutable", Napi::Function::New(env, OpenExecutable));
  exports.Set("fstatFd", Napi::Function::New(env, FstatFd));
  exports.Set("statPath", Napi::Function::New(env, StatPath));
  exports.Set("closeFd", Napi::Function::New(env, CloseFd));
  exports.Set("peerUid", Napi::Function::New(env, PeerUid));
  exports.Set("spawnParked", Napi::Function::New(env, SpawnParked));
  exports.Set("decide", Napi::Function::New(env, Decide));
  exports.Set("resizePty", Napi::Function::New(env, ResizePty));
  return exports;
}

}  // namespace

NODE_API_MODULE(turnkeeper_launcher, Init)
