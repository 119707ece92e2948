// ServerProcess: starts the real `kingfisher` binary (build/bin, from KF_BIN_DIR) in a role
// (standalone by default, coord or node) on free loopback ports with a temp data dir, waits
// until its /healthz answers 200 (it serves), and stops it by pid. For integration tests; reusable
// by other suites.
//
// Thread-safety: one thread drives a ServerProcess. Ownership: owns the child process (killed
// with SIGKILL in the destructor if still running) and, when it created it, the temp dir.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "common/testing/loopback.h"  // HttpGet, FreeLoopbackPort for the suites
#include "common/testing/temp_dir.h"  // TempDir for the suites
#include "kingfisher/v1/streaming.pb.h"

namespace kf::testing {

struct ProcessResult {
  bool exited = false;  // false: still running at the deadline (then killed)
  int exit_code = -1;   // when it exited normally
  int term_signal = 0;  // when a signal killed it
  std::string output;   // stdout + stderr
};

// Runs the binary with `args` and `env` (added to the environment) to completion.
ProcessResult RunKingfisher(const std::vector<std::string>& args,
                            const std::map<std::string, std::string>& env = {},
                            absl::Duration timeout = absl::Seconds(30));

class ServerProcess {
 public:
  struct Options {
    std::string data_dir;  // required (the log goes next to it: <data_dir>.log)
    std::vector<std::string> extra_args;
    std::map<std::string, std::string> env;
    std::string listen;               // fixed gRPC address; empty = a free loopback port
    std::string role = "standalone";  // `kingfisher run <role>` (last: positional users)
    // stdout + stderr; empty: <data_dir>.log. Give each process sharing a data dir its own.
    std::string log_path;
    // In KF_BIN_DIR: `kingfisher`, or the test build `kingfisher-crash-hook`
    // (tests/server/crash_hook_main.cc).
    std::string binary = "kingfisher";
    // How the free loopback ports are picked (null: FreeLoopbackPort); a test seam.
    std::function<int()> pick_port;
  };

  explicit ServerProcess(Options options);
  ~ServerProcess();

  // Starts the server and waits until /healthz is 200 (false + output on failure). A second
  // Start after Stop/Kill/WaitForExit restarts it on the same addresses. On the first, a port
  // it picked that another process took meanwhile makes it pick new ports and try again (at
  // most 5 times).
  bool Start(absl::Duration timeout = absl::Seconds(30));
  // Start in two halves: spawn the process; wait for /healthz 200 (false if it exited).
  void Launch();
  bool WaitHealthy(absl::Duration timeout = absl::Seconds(30));
  // SIGTERM, then waits for the exit.
  ProcessResult Stop(absl::Duration timeout = absl::Seconds(30));
  // Waits for the process to exit on its own (e.g. a test crash hook); how it exited also when
  // WaitHealthy or Running already saw it go.
  ProcessResult WaitForExit(absl::Duration timeout = absl::Seconds(30));
  void Kill();
  // The environment added to the next Start or Launch.
  void set_env(std::map<std::string, std::string> env) { options_.env = std::move(env); }
  // True while the process has not exited.
  bool Running();

  const std::string& address() const { return address_; }
  int http_port() const { return http_port_; }
  pid_t pid() const { return pid_; }
  std::string Output() const;

  // Waits until the server reports at least `n` open readers on `pchannel` (GetStatus), e.g.
  // so a consumer is known to be tailing before a test appends. False at the deadline.
  bool WaitForReaders(const std::string& pchannel, int n,
                      absl::Duration timeout = absl::Seconds(30));
  // Polls GetStatus until `done` holds for an answer; that answer, or nullopt at the deadline.
  std::optional<kingfisher::v1::GetStatusResponse> WaitForStatus(
      const std::function<bool(const kingfisher::v1::GetStatusResponse&)>& done,
      absl::Duration timeout = absl::Seconds(30));

 private:
  Options options_;
  std::string address_;
  int http_port_ = 0;
  std::string log_path_;
  pid_t pid_ = -1;
  std::optional<ProcessResult> reaped_;  // the exit WaitHealthy or Running saw, since Launch
};

}  // namespace kf::testing
