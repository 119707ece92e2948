#include "server/signals.h"

#include <signal.h>

#include <cstdlib>
#include <thread>

namespace kf::server {
namespace {

sigset_t ShutdownSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

void ShutdownSignals::Block() {
  sigset_t set = ShutdownSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void ShutdownSignals::Start() {
  std::thread([this] {
    sigset_t set = ShutdownSet();
    int sig = 0;
    while (sigwait(&set, &sig) != 0) {
    }
    signal_ = sig;  // published by the notification
    shutdown_.Notify();
    while (sigwait(&set, &sig) != 0) {
    }
    std::_Exit(128 + sig);  // second signal: the operator wants out now
  }).detach();
}

int ShutdownSignals::WaitForShutdown() {
  shutdown_.WaitForNotification();
  return signal_;
}

bool ShutdownSignals::ShutdownRequestedWithin(absl::Duration timeout) {
  return shutdown_.WaitForNotificationWithTimeout(timeout);
}

}  // namespace kf::server
