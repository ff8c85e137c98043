// The Linux launch backend (docs/launcher.md §3 "The native side"): the retained-descriptor half of
// attestation, and the parked launch. The launch thread is the tracer (ptrace requests must come from
// the thread that forked the child):
//   fork -> child: PDEATHSIG, stdio, fchdir, PTRACE_TRACEME, execveat(fd, "", AT_EMPTY_PATH)
//        -> parent: status pipe EOF (exec ok) or errno (exec failed)
//        -> waitpid: SIGTRAP stop at the exec boundary
//        -> PTRACE_O_EXITKILL, stat /proc/<pid>/exe -> event "parked"
//        -> the decision: detach -> "running" ... "exit"; kill/timeout -> SIGKILL, reap, "refused"
#include "backend.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace turnkeeper {
namespace {

std::string ErrnoText(int err) { return std::string(strerror(err)); }

FileStat FromStat(const struct stat& st) {
  FileStat out;
  out.dev = static_cast<unsigned long long>(st.st_dev);
  out.ino = static_cast<unsigned long long>(st.st_ino);
  out.size = static_cast<double>(st.st_size);
  out.mode = st.st_mode;
  out.nlink = static_cast<double>(st.st_nlink);
  out.uid = st.st_uid;
  out.mtimeNs = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  out.ctimeNs = static_cast<long long>(st.st_ctim.tv_sec) * 1000000000LL + st.st_ctim.tv_nsec;
  return out;
}

OpenOutcome Failure(const char* reason, const std::string& detail) {
  OpenOutcome out;
  out.reason = reason;
  out.detail = detail;
  return out;
}

struct LinuxSpawn : PreparedSpawn {
  int execFd = -1;
  int cwdFd = -1;
  std::vector<std::string> argv;
  std::vector<std::string> envp;
  int childStdio[3] = {-1, -1, -1};  // what the child dup2s onto 0, 1, 2 (-1: inherit)
  int ptySlave = -1;                 // pty mode: the child's controlling terminal
  std::vector<int> parentCloses;     // child-side fds the parent closes after fork
  unsigned timeoutMs = 10000;
  // A plan dropped before its launch thread took it (an exception while preparing) closes what it holds.
  ~LinuxSpawn() override {
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

int OpenPipe(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

// Whether an inherited-stdio child should own the terminal: stdin is a terminal whose foreground
// process group is ours (a person ran us in a shell). Then the child, which gets a process group of
// its own, must be made that terminal's foreground group, or its first read of the terminal stops it
// with SIGTTIN (state T: a TUI that never draws) and Ctrl-C and window size changes never reach it.
bool OwnsForegroundTerminal() { return isatty(STDIN_FILENO) == 1 && tcgetpgrp(STDIN_FILENO) == getpgrp(); }

// tcsetpgrp from a process group that is not the foreground one raises SIGTTOU unless the calling
// thread blocks it: block it around the call (async-signal-safe: the child uses it between fork and exec).
void ForegroundTo(pid_t group) {
  sigset_t ttou, saved;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  pthread_sigmask(SIG_BLOCK, &ttou, &saved);
  tcsetpgrp(STDIN_FILENO, group);
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
}

// Gives the terminal back to the launching process group when the launch is over, however it ends.
struct TerminalReturn {
  bool given = false;
  ~TerminalReturn() {
    if (given) ForegroundTo(getpgrp());
  }
};

}  // namespace

// Walk the symlink chain of the final component, resolve the rest with realpath, open the result once
// (O_NOFOLLOW) and return that descriptor as the retained authority.
OpenOutcome OpenExecutable(const std::string& path) {
  std::string current = path;
  if (current.empty() || current[0] != '/') return Failure("resolution_changed", "path must be absolute");
  std::vector<Hop> chain;
  for (;;) {
    struct stat link;
    if (lstat(current.c_str(), &link) != 0)
      return Failure("resolution_changed", current + ": " + ErrnoText(errno));
    Hop hop;
    hop.path = current;
    if (!S_ISLNK(link.st_mode)) {
      chain.push_back(hop);
      break;
    }
    if (chain.size() + 1 > 40) return Failure("resolution_changed", "too many symbolic links");
    char target[PATH_MAX];
    ssize_t n = readlink(current.c_str(), target, sizeof(target) - 1);
    if (n < 0) return Failure("resolution_changed", current + ": " + ErrnoText(errno));
    target[n] = '\0';
    hop.target = target;
    hop.link = true;
    chain.push_back(hop);
    std::string next(target);
    if (next.empty() || next[0] != '/') next = current.substr(0, current.rfind('/') + 1) + next;
    current = next;
  }
  char resolved[PATH_MAX];
  if (realpath(current.c_str(), resolved) == nullptr)
    return Failure("resolution_changed", current + ": " + ErrnoText(errno));
  int fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return Failure("resolution_changed", std::string(resolved) + ": " + ErrnoText(errno));
  struct stat opened, named;
  // The path must still name the object we opened: otherwise it moved under us while resolving.
  if (fstat(fd, &opened) != 0 || stat(resolved, &named) != 0 || opened.st_dev != named.st_dev ||
      opened.st_ino != named.st_ino) {
    close(fd);
    return Failure("resolution_changed", "the path changed while it was resolved");
  }
  if (!S_ISREG(opened.st_mode)) {
    close(fd);
    return Failure("unsupported_entrypoint", "not a regular file");
  }
  OpenOutcome out;
  out.ok = true;
  out.fd = fd;
  out.chain = std::move(chain);
  out.resolved = resolved;
  out.stat = FromStat(opened);
  return out;
}

bool FstatFd(int fd, FileStat* out) {
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  *out = FromStat(st);
  return true;
}

bool StatPath(const std::string& path, FileStat* out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  *out = FromStat(st);
  return true;
}

bool CloseFd(int fd) { return close(fd) == 0; }

// SO_PEERCRED: the kernel's record of the peer's credentials at connect(), which the peer cannot
// forge (unlike anything it sends).
bool PeerUid(int fd, uint32_t* uid) {
  struct ucred cred;
  socklen_t length = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0 || length != sizeof(cred)) return false;
  *uid = cred.uid;
  return true;
}

std::shared_ptr<PreparedSpawn> PrepareSpawn(const SpawnRequest& request, SpawnHandles* handles) {
  auto plan = std::make_shared<LinuxSpawn>();
  plan->execFd = request.execFd;
  plan->argv = request.argv;
  plan->envp = request.envp;
  plan->timeoutMs = request.timeoutMs;
  plan->cwdFd = open(request.cwd.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (plan->cwdFd < 0) throw std::runtime_error("cwd " + request.cwd + ": " + ErrnoText(errno));
  std::vector<int> parentSide;  // returned to JavaScript on success, closed here on failure
  try {
    if (request.stdio == "pipe") {
      int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
      if (OpenPipe(in) || OpenPipe(out) || OpenPipe(err)) {
        int saved = errno;
        for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]})
          if (fd >= 0) close(fd);
        throw std::runtime_error("pipe: " + ErrnoText(saved));
      }
      parentSide = {in[1], out[0], err[0]};
      plan->childStdio[0] = in[0];
      plan->childStdio[1] = out[1];
      plan->childStdio[2] = err[1];
      plan->parentCloses = {in[0], out[1], err[1]};
      handles->in = in[1];
      handles->out = out[0];
      handles->err = err[0];
    } else if (request.stdio == "pty") {
      int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
      if (master < 0) throw std::runtime_error("pty: " + ErrnoText(errno));
      parentSide = {master};
      if (grantpt(master) != 0 || unlockpt(master) != 0) throw std::runtime_error("pty: " + ErrnoText(errno));
      char name[128];
      if (ptsname_r(master, name, sizeof(name)) != 0)
        throw std::runtime_error("ptsname: " + ErrnoText(errno));
      int slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
      if (slave < 0) throw std::runtime_error("pty slave: " + ErrnoText(errno));
      struct winsize size {};
      size.ws_col = static_cast<unsigned short>(request.cols);
      size.ws_row = static_cast<unsigned short>(request.rows);
      ioctl(slave, TIOCSWINSZ, &size);
      plan->ptySlave = slave;
      plan->childStdio[0] = plan->childStdio[1] = plan->childStdio[2] = slave;
      plan->parentCloses = {slave};
      handles->pty = master;
    } else if (request.stdio != "inherit") {
      throw std::runtime_error("stdio must be pipe, pty or inherit");
    }
  } catch (...) {
    for (int fd : parentSide) close(fd);
    *handles = SpawnHandles();
    throw;
  }
  return plan;
}

// The child does only async-signal-safe work between fork and exec.
void RunSpawn(std::shared_ptr<PreparedSpawn> prepared, LaunchChannel& channel) {
  auto plan = std::static_pointer_cast<LinuxSpawn>(prepared);
  std::vector<char*> argv, envp;
  for (auto& arg : plan->argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  for (auto& var : plan->envp) envp.push_back(const_cast<char*>(var.c_str()));
  envp.push_back(nullptr);
  int status[2];
  if (pipe2(status, O_CLOEXEC) != 0) {
    channel.Emit(
        new LaunchEvent("refused", 0, "launch_verification_failed", "status pipe: " + ErrnoText(errno)));
    return;
  }
  pid_t parentPid = getpid();
  bool takeTerminal = plan->ptySlave < 0 && plan->childStdio[0] < 0 && OwnsForegroundTerminal();
  TerminalReturn terminal;
  terminal.given = takeTerminal;
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
      // Signals are at their defaults (ResetSignalsInChild): ForegroundTo blocks SIGTTOU for the call.
      if (takeTerminal) ForegroundTo(getpid());
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
  int forkErr = errno;
  close(status[1]);
  for (int fd : plan->parentCloses) close(fd);
  plan->parentCloses.clear();
  if (plan->cwdFd >= 0) close(plan->cwdFd);
  plan->cwdFd = -1;
  if (pid < 0) {
    terminal.given = false;
    close(status[0]);
    channel.Emit(new LaunchEvent("refused", 0, "launch_verification_failed", "fork: " + ErrnoText(forkErr)));
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
    channel.Emit(
        new LaunchEvent("refused", pid, "launch_verification_failed", "exec failed: " + ErrnoText(childErr)));
    return;
  }
  if (waitpid(pid, &wstatus, __WALL) != pid || !WIFSTOPPED(wstatus) || WSTOPSIG(wstatus) != SIGTRAP) {
    if (WIFSTOPPED(wstatus)) {
      kill(pid, SIGKILL);
      waitpid(pid, &wstatus, __WALL);
    }
    channel.Emit(new LaunchEvent("refused", pid, "launch_verification_failed",
                                 "the child did not stop at the exec boundary"));
    return;
  }
  // From here on, if this process dies the kernel kills the parked child (it never runs unverified).
  ptrace(PTRACE_SETOPTIONS, pid, nullptr, reinterpret_cast<void*>(PTRACE_O_EXITKILL));
  LaunchEvent* parked = new LaunchEvent("parked", pid);
  std::string exePath = "/proc/" + std::to_string(pid) + "/exe";
  parked->hasExe = StatPath(exePath, &parked->exe);
  channel.MarkParked();
  channel.Emit(parked);

  auto [decision, reason] = channel.AwaitDecision(plan->timeoutMs);
  if (decision == Decision::Kill) {
    kill(pid, SIGKILL);
    waitpid(pid, &wstatus, __WALL);
    channel.Emit(
        new LaunchEvent("refused", pid, reason, "killed at the exec boundary before its first instruction"));
    return;
  }
  if (ptrace(PTRACE_DETACH, pid, nullptr, nullptr) != 0) {
    int err = errno;
    kill(pid, SIGKILL);
    waitpid(pid, &wstatus, __WALL);
    channel.Emit(new LaunchEvent("refused", pid, "launch_verification_failed", "detach: " + ErrnoText(err)));
    return;
  }
  channel.Emit(new LaunchEvent("running", pid));
  while (waitpid(pid, &wstatus, __WALL) < 0 && errno == EINTR) {
  }
  // The terminal back to the launcher before it hears of the exit (and writes its last lines).
  if (terminal.given) ForegroundTo(getpgrp());
  terminal.given = false;
  LaunchEvent* exited = new LaunchEvent("exit", pid);
  if (WIFEXITED(wstatus)) exited->code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) exited->signal = WTERMSIG(wstatus);
  channel.Emit(exited);
}

bool ResizePty(int fd, unsigned cols, unsigned rows) {
  struct winsize size {};
  size.ws_col = static_cast<unsigned short>(cols);
  size.ws_row = static_cast<unsigned short>(rows);
  return ioctl(fd, TIOCSWINSZ, &size) == 0;
}

}  // namespace turnkeeper
