// Turnkeeper's native launcher (Linux): the retained-descriptor half of attestation and the parked
// launch of spec §6. JavaScript (src/launcher/) owns policy, hashing and receipts; this file owns
// only what JavaScript cannot do safely: opening the executable once, forking without running
// JavaScript in the child, and holding the child at the exec boundary under ptrace until told.
//
// Launch state machine (one thread per launch, which is also the tracer: ptrace requests must come
// from the thread that forked the child):
//   fork -> child: PDEATHSIG, stdio, fchdir, PTRACE_TRACEME, execveat(fd, "", AT_EMPTY_PATH)
//        -> parent: status pipe EOF (exec ok) or errno (exec failed -> "exec_failed")
//        -> waitpid: SIGTRAP stop at the exec boundary (child exited instead -> "child_exited")
//        -> PTRACE_O_EXITKILL, identify /proc/<pid>/exe -> event "parked"
//        -> wait for a decision: detach -> "running" ... "exit"; kill/timeout -> SIGKILL, reap, "killed"
#include <napi.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fcntl.h>
#include <limits.h>
#include <map>
#include <memory>
#include <mutex>
#include <signal.h>
#include <string>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

namespace {

std::string ErrnoText(int err) { return std::string(strerror(err)); }

Napi::Object StatObject(Napi::Env env, const struct stat& st) {
  Napi::Object out = Napi::Object::New(env);
  // dev and ino can exceed 2^53: decimal strings keep them exact and JSON-friendly.
  out.Set("dev", std::to_string(static_cast<unsigned long long>(st.st_dev)));
  out.Set("ino", std::to_string(static_cast<unsigned long long>(st.st_ino)));
  out.Set("size", Napi::Number::New(env, static_cast<double>(st.st_size)));
  out.Set("mode", Napi::Number::New(env, st.st_mode));
  out.Set("nlink", Napi::Number::New(env, static_cast<double>(st.st_nlink)));
  out.Set("uid", Napi::Number::New(env, st.st_uid));
  out.Set("mtimeNs", std::to_string(static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec));
  out.Set("ctimeNs", std::to_string(static_cast<long long>(st.st_ctim.tv_sec) * 1000000000LL + st.st_ctim.tv_nsec));
  return out;
}

Napi::Object Failure(Napi::Env env, const char* reason, const std::string& detail) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("ok", false);
  out.Set("reason", reason);
  out.Set("detail", detail);
  return out;
}

// openExecutable(path): walk the symlink chain of the final component, resolve the rest with
// realpath, open the result once (O_NOFOLLOW) and return that descriptor as the retained authority.
Napi::Value OpenExecutable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string current = info[0].As<Napi::String>();
  if (current.empty() || current[0] != '/') return Failure(env, "resolution_changed", "path must be absolute");
  Napi::Array chain = Napi::Array::New(env);
  uint32_t hops = 0;
  for (;;) {
    struct stat link;
    if (lstat(current.c_str(), &link) != 0) return Failure(env, "resolution_changed", current + ": " + ErrnoText(errno));
    Napi::Object hop = Napi::Object::New(env);
    hop.Set("path", current);
    if (!S_ISLNK(link.st_mode)) {
      chain.Set(hops, hop);
      break;
    }
    if (++hops > 40) return Failure(env, "resolution_changed", "too many symbolic links");
    char target[PATH_MAX];
    ssize_t n = readlink(current.c_str(), target, sizeof(target) - 1);
    if (n < 0) return Failure(env, "resolution_changed", current + ": " + ErrnoText(errno));
    target[n] = '\0';
    hop.Set("target", std::string(target));
    chain.Set(hops - 1, hop);
    std::string next(target);
    if (next.empty() || next[0] != '/') next = current.substr(0, current.rfind('/') + 1) + next;
    current = next;
  }
  char resolved[PATH_MAX];
  if (realpath(current.c_str(), resolved) == nullptr) return Failure(env, "resolution_changed", current + ": " + ErrnoText(errno));
  int fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return Failure(env, "resolution_changed", std::string(resolved) + ": " + ErrnoText(errno));
  struct stat opened, named;
  // The path must still name the object we opened: otherwise it moved under us while resolving.
  if (fstat(fd, &opened) != 0 || stat(resolved, &named) != 0 || opened.st_dev != named.st_dev || opened.st_ino != named.st_ino) {
    close(fd);
    return Failure(env, "resolution_changed", "the path changed while it was resolved");
  }
  if (!S_ISREG(opened.st_mode)) {
    close(fd);
    return Failure(env, "unsupported_entrypoint", "not a regular file");
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("ok", true);
  out.Set("fd", fd);
  out.Set("chain", chain);
  out.Set("resolved", std::string(resolved));
  out.Set("stat", StatObject(env, opened));
  return out;
}

Napi::Value FstatFd(const Napi::CallbackInfo& info) {
  struct stat st;
  if (fstat(info[0].As<Napi::Number>().Int32Value(), &st) != 0) return info.Env().Null();
  return StatObject(info.Env(), st);
}

Napi::Value StatPath(const Napi::CallbackInfo& info) {
  std::string path = info[0].As<Napi::String>();
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return info.Env().Null();
  return StatObject(info.Env(), st);
}

Napi::Value CloseFd(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), close(info[0].As<Napi::Number>().Int32Value()) == 0);
}

// ---- parked launches ---------------------------------------------------------------------------

// Hold: JavaScript is committing the receipt and has taken over the deadline (its store has its own
// timeout); the backstop timer then no longer fires, so a receipt is never written for a child the
// timer already killed.
enum class Decision { None, Hold, Detach, Kill };

struct Event {
  Event(std::string type_, pid_t pid_, std::string reason_ = "", std::string detail_ = "")
      : type(std::move(type_)), pid(pid_), reason(std::move(reason_)), detail(std::move(detail_)) {}
  std::string type;  // parked | running | exit | refused
  pid_t pid = 0;
  std::string reason;
  std::string detail;
  struct stat exe {};
  bool hasExe = false;
  int code = -1;
  int signal = 0;
};

struct Launch {
  uint32_t id = 0;
  std::mutex mutex;
  std::condition_variable changed;
  Decision decision = Decision::None;
  std::string killReason;
  bool parked = false;
  bool finished = false;
  Napi::ThreadSafeFunction tsfn;
  std::thread thread;
};

std::mutex registryMutex;
std::map<uint32_t, std::shared_ptr<Launch>> registry;
uint32_t nextId = 1;

void Emit(const std::shared_ptr<Launch>& launch, Event* event) {
  launch->tsfn.BlockingCall(event, [](Napi::Env env, Napi::Function callback, Event* data) {
    Napi::Object out = Napi::Object::New(env);
    out.Set("type", data->type);
    out.Set("pid", Napi::Number::New(env, data->pid));
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
}

struct SpawnPlan {
  int execFd = -1;
  int cwdFd = -1;
  std::vector<std::string> argv;
  std::vector<std::string> envp;
  int childStdio[3] = {-1, -1, -1};  // what the child dup2s onto 0, 1, 2 (-1: inherit)
  int ptySlave = -1;                 // pty mode: the child's controlling terminal
  std::vector<int> parentCloses;     // child-side fds the parent closes after fork
  unsigned timeoutMs = 10000;
  // A plan dropped before its launch thread took it (an exception while preparing) closes what it holds.
  ~SpawnPlan() {
    if (cwdFd >= 0) close(cwdFd);
    for (int fd : parentCloses) close(fd);
  }
};

void ResetSignalsInChild() {
  // Node ignores SIGPIPE (and others); ignored dispositions survive execve, so restore defaults.
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; sig++) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Runs on the launch thread: the child does only async-signal-safe work between fork and exec.
void RunLaunch(std::shared_ptr<Launch> launch, std::shared_ptr<SpawnPlan> plan) {
  std::vector<char*> argv, envp;
  for (auto& arg : plan->argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  for (auto& var : plan->envp) envp.push_back(const_cast<char*>(var.c_str()));
  envp.push_back(nullptr);
  int status[2];
  if (pipe2(status, O_CLOEXEC) != 0) {
    Emit(launch, new Event("refused", 0, "launch_verification_failed", "status pipe: " + ErrnoText(errno)));
    return;
  }
  pid_t parentPid = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    // Child. Die with the launching thread: while parked this is what keeps an unverified child from
    // ever running; it also survives the exec, so the agent's lifetime stays tied to the process that
    // launched it (the CLI waiting on it, or the editor's terminal), by design.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parentPid) _exit(127);
    ResetSignalsInChild();
    if (plan->ptySlave >= 0) {
      setsid();
      ioctl(plan->ptySlave, TIOCSCTTY, 0);
    } else {
      setpgid(0, 0);
    }
    for (int target = 0; target < 3; target++) {
      int source = plan->childStdio[target];
      if (source >= 0) {
        if (dup2(source, target) < 0) goto failed;
      } else {
        // Inherited stdio must survive the exec, but Node marks its own 0-2 close-on-exec.
        int flags = fcntl(target, F_GETFD);
        if (flags >= 0 && (flags & FD_CLOEXEC) != 0) fcntl(target, F_SETFD, flags & ~FD_CLOEXEC);
      }
    }
    if (plan->cwdFd >= 0 && fchdir(plan->cwdFd) != 0) goto failed;
    if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0) goto failed;
    syscall(SYS_execveat, plan->execFd, "", argv.data(), envp.data(), AT_EMPTY_PATH);
  failed:
    int err = errno;
    ssize_t ignored = write(status[1], &err, sizeof(err));
    (void)ignored;
    _exit(127);
  }
  close(status[1]);
  for (int fd : plan->parentCloses) close(fd);
  plan->parentCloses.clear();
  if (plan->cwdFd >= 0) close(plan->cwdFd);
  plan->cwdFd = -1;
  if (pid < 0) {
    close(status[0]);
    Emit(launch, new Event("refused", 0, "launch_verification_failed", "fork: " + ErrnoText(errno)));
    return;
  }
  int childErr = 0;
  ssize_t got;
  do got = read(status[0], &childErr, sizeof(childErr));
  while (got < 0 && errno == EINTR);
  close(status[0]);
  int wstatus = 0;
  if (got > 0) {
    waitpid(pid, &wstatus, __WALL);
    Emit(launch, new Event("refused", pid, "launch_verification_failed", "exec failed: " + ErrnoText(childErr)));
    return;
  }
  if (waitpid(pid, &wstatus, __WALL) != pid || !WIFSTOPPED(wstatus) || WSTOPSIG(wstatus) != SIGTRAP) {
    if (WIFSTOPPED(wstatus)) {
      kill(pid, SIGKILL);
      waitpid(pid, &wstatus, __WALL);
    }
    Emit(launch, new Event("refused", pid, "launch_verification_failed", "the child did not stop at the exec boundary"));
    return;
  }
  // From here on, if this process dies the kernel kills the parked child (it never runs unverified).
  ptrace(PTRACE_SETOPTIONS, pid, nullptr, reinterpret_cast<void*>(PTRACE_O_EXITKILL));
  Event* parked = new Event("parked", pid);
  std::string exePath = "/proc/" + std::to_string(pid) + "/exe";
  parked->hasExe = stat(exePath.c_str(), &parked->exe) == 0;
  {
    std::lock_guard<std::mutex> lock(launch->mutex);
    launch->parked = true;
  }
  Emit(launch, parked);

  Decision decision;
  std::string reason;
  {
    std::unique_lock<std::mutex> lock(launch->mutex);
    auto final = [&] { return launch->decision == Decision::Detach || launch->decision == Decision::Kill; };
    bool decided = launch->changed.wait_for(lock, std::chrono::milliseconds(plan->timeoutMs), final);
    if (!decided && launch->decision == Decision::Hold) {
      // Held: wait for the verdict, with a generous last-resort bound against a wedged caller.
      decided = launch->changed.wait_for(lock, std::chrono::minutes(10), final);
    }
    if (!decided) {
      launch->decision = Decision::Kill;
      launch->killReason = "launch_timeout";
    }
    decision = launch->decision;
    reason = launch->killReason;
    launch->parked = false;
  }
  if (decision == Decision::Kill) {
    kill(pid, SIGKILL);
    waitpid(pid, &wstatus, __WALL);
    Emit(launch, new Event("refused", pid, reason, "killed at the exec boundary before its first instruction"));
    return;
  }
  if (ptrace(PTRACE_DETACH, pid, nullptr, nullptr) != 0) {
    int err = errno;
    kill(pid, SIGKILL);
    waitpid(pid, &wstatus, __WALL);
    Emit(launch, new Event("refused", pid, "launch_verification_failed", "detach: " + ErrnoText(err)));
    return;
  }
  Emit(launch, new Event("running", pid));
  while (waitpid(pid, &wstatus, __WALL) < 0 && errno == EINTR) {
  }
  Event* exited = new Event("exit", pid);
  if (WIFEXITED(wstatus)) exited->code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) exited->signal = WTERMSIG(wstatus);
  Emit(launch, exited);
}

void FinishLaunch(std::shared_ptr<Launch> launch) {
  {
    std::lock_guard<std::mutex> lock(launch->mutex);
    launch->finished = true;
  }
  launch->tsfn.Release();
  std::lock_guard<std::mutex> lock(registryMutex);
  registry.erase(launch->id);
}

int OpenPipe(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

// spawnParked({fd, argv, env, cwd, stdio, cols, rows, timeoutMs}, onEvent) -> {id, stdin?, stdout?, stderr?, pty?}
Napi::Value SpawnParked(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object options = info[0].As<Napi::Object>();
  Napi::Function onEvent = info[1].As<Napi::Function>();
  auto plan = std::make_shared<SpawnPlan>();
  plan->execFd = options.Get("fd").As<Napi::Number>().Int32Value();
  Napi::Array argv = options.Get("argv").As<Napi::Array>();
  for (uint32_t i = 0; i < argv.Length(); i++) plan->argv.push_back(argv.Get(i).As<Napi::String>());
  Napi::Array envp = options.Get("env").As<Napi::Array>();
  for (uint32_t i = 0; i < envp.Length(); i++) plan->envp.push_back(envp.Get(i).As<Napi::String>());
  std::string cwd = options.Get("cwd").As<Napi::String>();
  std::string stdio = options.Get("stdio").As<Napi::String>();
  plan->timeoutMs = options.Get("timeoutMs").As<Napi::Number>().Uint32Value();

  Napi::Object result = Napi::Object::New(env);
  plan->cwdFd = open(cwd.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (plan->cwdFd < 0) throw Napi::Error::New(env, "cwd " + cwd + ": " + ErrnoText(errno));
  std::vector<int> parentSide;  // returned to JavaScript on success, closed here on failure
  try {
  if (stdio == "pipe") {
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    if (OpenPipe(in) || OpenPipe(out) || OpenPipe(err)) {
      for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) if (fd >= 0) close(fd);
      throw Napi::Error::New(env, "pipe: " + ErrnoText(errno));
    }
    parentSide = {in[1], out[0], err[0]};
    plan->childStdio[0] = in[0];
    plan->childStdio[1] = out[1];
    plan->childStdio[2] = err[1];
    plan->parentCloses = {in[0], out[1], err[1]};
    result.Set("stdin", in[1]);
    result.Set("stdout", out[0]);
    result.Set("stderr", err[0]);
  } else if (stdio == "pty") {
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) throw Napi::Error::New(env, "pty: " + ErrnoText(errno));
    parentSide = {master};
    if (grantpt(master) != 0 || unlockpt(master) != 0) throw Napi::Error::New(env, "pty: " + ErrnoText(errno));
    char name[128];
    if (ptsname_r(master, name, sizeof(name)) != 0) throw Napi::Error::New(env, "ptsname: " + ErrnoText(errno));
    int slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0) throw Napi::Error::New(env, "pty slave: " + ErrnoText(errno));
    struct winsize size {};
    size.ws_col = static_cast<unsigned short>(options.Get("cols").As<Napi::Number>().Uint32Value());
    size.ws_row = static_cast<unsigned short>(options.Get("rows").As<Napi::Number>().Uint32Value());
    ioctl(slave, TIOCSWINSZ, &size);
    plan->ptySlave = slave;
    plan->childStdio[0] = plan->childStdio[1] = plan->childStdio[2] = slave;
    plan->parentCloses = {slave};
    result.Set("pty", master);
  } else if (stdio != "inherit") {
    throw Napi::Error::New(env, "stdio must be pipe, pty or inherit");
  }
  } catch (...) {
    for (int fd : parentSide) close(fd);
    throw;
  }

  auto launch = std::make_shared<Launch>();
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    launch->id = nextId++;
    registry[launch->id] = launch;
  }
  launch->tsfn = Napi::ThreadSafeFunction::New(env, onEvent, "turnkeeper-launch", 0, 1);
  launch->thread = std::thread([launch, plan] {
    RunLaunch(launch, plan);
    FinishLaunch(launch);
  });
  launch->thread.detach();
  result.Set("id", launch->id);
  return result;
}

std::shared_ptr<Launch> Find(uint32_t id) {
  std::lock_guard<std::mutex> lock(registryMutex);
  auto it = registry.find(id);
  return it == registry.end() ? nullptr : it->second;
}

// decide(id, "hold" | "detach" | "kill", reason): true only if the launch is parked and not yet
// decided (hold may precede detach or kill), so a second commit, or a commit after a cancel or a
// timeout, is refused rather than acted on.
Napi::Value Decide(const Napi::CallbackInfo& info) {
  auto launch = Find(info[0].As<Napi::Number>().Uint32Value());
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
  struct winsize size {};
  size.ws_col = static_cast<unsigned short>(info[1].As<Napi::Number>().Uint32Value());
  size.ws_row = static_cast<unsigned short>(info[2].As<Napi::Number>().Uint32Value());
  return Napi::Boolean::New(info.Env(), ioctl(info[0].As<Napi::Number>().Int32Value(), TIOCSWINSZ, &size) == 0);
}

// When the JavaScript environment goes away (worker exit, extension host reload), no parked child
// may outlive it as a runnable agent: undecided launches are killed.
void KillUndecided(void*) {
  std::lock_guard<std::mutex> lock(registryMutex);
  for (auto& [id, launch] : registry) {
    std::lock_guard<std::mutex> guard(launch->mutex);
    if (launch->decision == Decision::None || launch->decision == Decision::Hold) {
      launch->decision = Decision::Kill;
      launch->killReason = "launch_verification_failed";
      launch->changed.notify_all();
    }
  }
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("platformSupported", true);
  exports.Set("openExecutable", Napi::Function::New(env, OpenExecutable));
  exports.Set("fstatFd", Napi::Function::New(env, FstatFd));
  exports.Set("statPath", Napi::Function::New(env, StatPath));
  exports.Set("closeFd", Napi::Function::New(env, CloseFd));
  exports.Set("spawnParked", Napi::Function::New(env, SpawnParked));
  exports.Set("decide", Napi::Function::New(env, Decide));
  exports.Set("resizePty", Napi::Function::New(env, ResizePty));
  napi_add_env_cleanup_hook(env, KillUndecided, nullptr);
  return exports;
}

}  // namespace

NODE_API_MODULE(turnkeeper_launcher, Init)
