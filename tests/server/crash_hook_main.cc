// kingfisher-crash-hook: the server binary with a crash hook, for the tests that need a
// server to die at the worst moment of an append (tests/e2e/idempotency_test.cc,
// tests/server/standalone_server_test.cc). KINGFISHER_TEST_CRASH_AFTER_DURABLE=N makes the
// process die (std::_Exit(137), as if SIGKILLed) right after its N-th append became durable
// and before that ack is written. KINGFISHER_TEST_HOLD_WAL_OPEN=<path> holds every WAL open
// until <path> exists, so a test sees the server while it recovers. Built with the tests, never
// installed.
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "server/server_main.h"

int main(int argc, char** argv) {
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
