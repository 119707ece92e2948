// kingfisher: the server binary. `kingfisher run standalone|coord|node|logstore [flags]`
// (server_main.h). Flags, env and config keys: docs/configuration.md.
#include <exception>
#include <iostream>

#include "absl/synchronization/mutex.h"
#include "server/server_main.h"

int main(int argc, char** argv) {
  // Debian's abseil keeps mutex deadlock detection on, a cost on every lock of the append
  // path; tests keep it (they are where lock-order bugs should surface).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  try {
    return kf::server::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "kingfisher: fatal: " << e.what() << "\n";
    return 1;
  }
}
