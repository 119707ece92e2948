// ShutdownSignals: SIGTERM/SIGINT handling for a server process.
//
// Block() must run in main before any thread starts, so every thread inherits the blocked mask
// and the signals reach only the dedicated sigwait thread. The first signal notifies
// WaitForShutdown (graceful shutdown); a second one exits the process at once
// (std::_Exit(128 + signal)).
//
// Thread-safety: Wait/Notify from any thread. Ownership: owns the signal thread; it is detached
// on purpose (it blocks in sigwait until the process ends). Errors: none.
#pragma once

#include "absl/synchronization/notification.h"

namespace kf::server {

class ShutdownSignals {
 public:
  // Blocks SIGTERM and SIGINT in the calling thread (and so in threads it creates later) and
  // ignores SIGPIPE (a peer closing a socket must not kill the server).
  static void Block();

  // Starts the sigwait thread.
  void Start();

  // Returns the number of the first signal received.
  int WaitForShutdown();
  // True when shutdown was requested (at once, or within `timeout`): an interruptible wait
  // for retry loops that run before the server is up.
  bool ShutdownRequestedWithin(absl::Duration timeout);

 private:
  absl::Notification shutdown_;
  int signal_ = 0;
};

}  // namespace kf::server
