// Platforms without a launch backend yet (macOS: POSIX_SPAWN_START_SUSPENDED; Windows:
// CREATE_SUSPENDED are the planned strategies). The module loads cleanly and says so; the
// JavaScript facade then refuses every attestation and launch with `unsupported_platform`.
#include <napi.h>

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("platformSupported", false);
  return exports;
}

NODE_API_MODULE(turnkeeper_launcher, Init)
