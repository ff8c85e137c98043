// The seam between the Node-API surface (addon.cc) and a platform's launch backend: linux_spawn.cc on
// Linux (fork, PTRACE_TRACEME, execveat on the retained descriptor, a SIGTRAP stop at the exec
// boundary), unsupported.cc everywhere else. A macOS or Windows backend is one more file implementing
// these functions (docs/launcher.md §6). Nothing here knows about JavaScript values: addon.cc converts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace turnkeeper {

// The identity fields attestation compares (docs/launcher.md §2 step 7), as the platform reports them.
struct FileStat {
  unsigned long long dev = 0;
  unsigned long long ino = 0;
  double size = 0;
  unsigned mode = 0;
  double nlink = 0;
  unsigned uid = 0;
  long long mtimeNs = 0;
  long long ctimeNs = 0;
};

struct Hop {
  std::string path;
  std::string target;  // empty for the final, non-link component
  bool link = false;
};

struct OpenOutcome {
  bool ok = false;
  std::string reason;  // resolution_changed | unsupported_entrypoint | unsupported_platform
  std::string detail;
  int fd = -1;
  std::vector<Hop> chain;
  std::string resolved;
  FileStat stat;
};

// The closed set of things a parked launch can be told; Hold hands the deadline to JavaScript.
enum class Decision { None, Hold, Detach, Kill };

struct LaunchEvent {
  LaunchEvent(std::string type_, long pid_, std::string reason_ = "", std::string detail_ = "")
      : type(std::move(type_)), pid(pid_), reason(std::move(reason_)), detail(std::move(detail_)) {}
  std::string type;  // parked | running | exit | refused
  long pid = 0;
  std::string reason;
  std::string detail;
  bool hasExe = false;
  FileStat exe;
  int code = -1;
  int signal = 0;
};

// What a backend's launch thread uses to report and to wait; implemented by addon.cc.
class LaunchChannel {
 public:
  virtual ~LaunchChannel() = default;
  // Hands an event to JavaScript (takes ownership).
  virtual void Emit(LaunchEvent* event) = 0;
  // The child is suspended at its exec boundary: decisions are accepted from now on.
  virtual void MarkParked() = 0;
  // Waits for detach or kill: `timeoutMs`, or, once JavaScript holds, a last-resort bound; a launch
  // with no final decision by then is killed with reason launch_timeout. Returns the decision and reason.
  virtual std::pair<Decision, std::string> AwaitDecision(unsigned timeoutMs) = 0;
};

struct SpawnRequest {
  int execFd = -1;
  std::vector<std::string> argv;
  std::vector<std::string> envp;
  std::string cwd;
  std::string stdio;  // pipe | pty | inherit
  unsigned cols = 80;
  unsigned rows = 24;
  unsigned timeoutMs = 10000;
};

// The parent's ends of the child's stdio (-1 when absent); JavaScript owns them after spawn.
struct SpawnHandles {
  int in = -1;
  int out = -1;
  int err = -1;
  int pty = -1;
};

// Whatever a backend prepared on the JavaScript thread for its launch thread (opaque to addon.cc).
struct PreparedSpawn {
  virtual ~PreparedSpawn() = default;
};

OpenOutcome OpenExecutable(const std::string& path);
bool FstatFd(int fd, FileStat* out);
bool StatPath(const std::string& path, FileStat* out);
bool CloseFd(int fd);
// The uid of the process at the other end of a connected Unix socket (the warm hook server checks
// every peer: src/cli/hookServer.ts); false when the platform cannot say.
bool PeerUid(int fd, uint32_t* uid);
// On the JavaScript thread: opens cwd and the stdio; throws std::runtime_error (nothing forked).
std::shared_ptr<PreparedSpawn> PrepareSpawn(const SpawnRequest& request, SpawnHandles* handles);
// On the launch thread: start the child suspended, report it parked, obey the decision, report its exit.
void RunSpawn(std::shared_ptr<PreparedSpawn> prepared, LaunchChannel& channel);
bool ResizePty(int fd, unsigned cols, unsigned rows);

}  // namespace turnkeeper
