// kingfisher-crash-hook: the server binary with a crash hook, for the tests that need a
// server to die at the worst moment of an append (tests/e2e/idempotency_test.cc,
// tests/server/standalone_server_test.cc). KINGFISHER_TEST_CRASH_AFTER_DURABLE=N makes the
// process die (std::_Exit(137), as if SIGKILLed) right after its N-th append became durable
// and before that ack is written. KINGFISHER_TEST_CRASH_AT=<point>[:<n>] SIGKILLs the process
// the n-th time (default 1) it passes the named crash point <point> (common/crash_point.h;
// tests/cluster/search_crash_test.cc). KINGFISHER_TEST_HOLD_WAL_OPEN=<path> holds every WAL
// open until <path> exists, so a test sees the server while it recovers. Built with the tests,
// never installed.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/crash_point.h"
#include "server/server_main.h"

namespace {

std::string crash_point;    // set before any thread starts, read-only after
int64_t crash_at_pass = 0;  // which pass of it kills
std::atomic<int64_t> passes{0};

void CrashAt(std::string_view point) {
  if (point != crash_point || passes.fetch_add(1) + 1 != crash_at_pass) return;
  // One write(2): the server's other threads log to stderr too, and a test looks for this line.
  const std::string line = "kingfisher-crash-hook: crash point " + std::string(point) + " pass " +
                           std::to_string(crash_at_pass) + ": SIGKILL\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
  kill(getpid(), SIGKILL);
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* at = std::getenv("KINGFISHER_TEST_CRASH_AT"); at != nullptr) {
    std::vector<std::string> parts = absl::StrSplit(at, ':');
    crash_point = parts[0];
    crash_at_pass = 1;
    if (crash_point.empty() || parts.size() > 2 ||
        (parts.size() == 2 && (!absl::SimpleAtoi(parts[1], &crash_at_pass) || crash_at_pass < 1))) {
      std::cerr << "kingfisher-crash-hook: KINGFISHER_TEST_CRASH_AT=" << at
                << ": expected <point>[:<n>] with n >= 1\n";
      return 2;
    }
    std::cerr << "kingfisher-crash-hook: SIGKILL at pass " << crash_at_pass << " of " << crash_point
              << "\n";
    kf::crash_point_handler.store(&CrashAt);
  }
  kf::server::ServerHooks hooks;
  int64_t n = 0;
  const char* env = std::getenv("KINGFISHER_TEST_CRASH_AFTER_DURABLE");
  if (env != nullptr && absl::SimpleAtoi(env, &n) && n > 0) {
    std::cerr << "kingfisher-crash-hook: crash after durable append #" << n << "\n";
    auto count = std::make_shared<std::atomic<int64_t>>(0);
    hooks.after_durable = [count, n] {
      if (count->fetch_add(1) + 1 == n) std::_Exit(137);
    };
  }
  if (const char* hold = std::getenv("KINGFISHER_TEST_HOLD_WAL_OPEN"); hold != nullptr) {
    std::cerr << "kingfisher-crash-hook: WAL opens wait for " << hold << "\n";
    hooks.before_wal_open = [path = std::string(hold)](const std::string&) {
      struct stat st;
      while (stat(path.c_str(), &st) != 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    };
  }
  return kf::server::Main(argc, argv, hooks);
}
