// The backend of every platform without a proven launch strategy (macOS: POSIX_SPAWN_START_SUSPENDED;
// Windows: CREATE_SUSPENDED, docs/launcher.md §6). JavaScript never loads an addon there
// (launchBackend() is the one platform gate) and refuses every attestation and launch with
// `unsupported_platform`; everything below refuses too if it is reached anyway.
#include "backend.h"

#include <stdexcept>

namespace turnkeeper {

OpenOutcome OpenExecutable(const std::string&) {
  OpenOutcome out;
  out.reason = "unsupported_platform";
  out.detail = "this platform has no launch backend";
  return out;
}

bool FstatFd(int, FileStat*) { return false; }
bool StatPath(const std::string&, FileStat*) { return false; }
bool PeerUid(int, uint32_t*) { return false; }
bool CloseFd(int) { return false; }

std::shared_ptr<PreparedSpawn> PrepareSpawn(const SpawnRequest&, SpawnHandles*) {
  throw std::runtime_error("this platform has no launch backend");
}

void RunSpawn(std::shared_ptr<PreparedSpawn>, LaunchChannel& channel) {
  channel.Emit(new LaunchEvent("refused", 0, "unsupported_platform", "this platform has no launch backend"));
}

bool ResizePty(int, unsigned, unsigned) { return false; }

}  // namespace turnkeeper
