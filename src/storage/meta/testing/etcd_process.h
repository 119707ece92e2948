// EtcdProcess: a real etcd server for integration tests — the Debian `etcd` binary (or
// $KF_ETCD_BIN) on free loopback ports with a data dir in a fresh temp directory, started and
// stopped by pid. Start waits for readiness by polling GET /health until a deadline.
//
// Raft timing is shortened (heartbeat 10 ms, election 100 ms): startup is faster and etcd's
// minimum lease TTL (1.5 × election timeout, rounded up to whole seconds) becomes 1 s, so
// lease-expiry tests stay short.
//
// Thread-safety: one thread drives an EtcdProcess. Ownership: owns the child process (killed
// with SIGKILL in the destructor) and the temp directory (removed in the destructor).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace kf::meta::testing {

class EtcdProcess {
 public:
  // The temp directory is created under `parent_dir` (default: the system temp dir), e.g. to
  // put etcd's data on the filesystem a benchmark measures.
  explicit EtcdProcess(const std::string& parent_dir = "");
  ~EtcdProcess();
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  // Serve clients over TLS (before the first Start): etcd's certificate and key, and the CA a
  // client's certificate must be signed by (client certificates are then required). Health
  // is then polled on a plaintext metrics listener of its own.
  struct Tls {
    std::string cert_file;
    std::string key_file;
    std::string client_ca_file;
  };
  void set_tls(Tls tls) { tls_ = std::move(tls); }

  // Starts etcd (again, after Kill: same ports, same data dir) and waits until /health says
  // true. On failure the process is killed and the status carries the end of its log. Before
  // the first successful start, a port taken meanwhile by another process makes it pick new
  // ports and try again (at most 5 times).
  absl::Status Start(absl::Duration timeout = absl::Seconds(20));
  // SIGKILL and reap (no-op when not running).
  void Kill();

  // "http://127.0.0.1:<client port>" ("https://" with TLS).
  std::string endpoint() const;
  const std::string& data_dir() const { return data_dir_; }
  pid_t pid() const { return pid_; }
  // The tail of etcd's log (stdout + stderr).
  std::string LogTail(size_t bytes = 4096) const;

 private:
  // Distinct free loopback ports for the client, peer and metrics listeners.
  void PickPorts();
  absl::Status StartOnce(absl::Duration timeout);
  // etcd's log from byte `offset` on.
  std::string LogSince(uintmax_t offset) const;

  std::string root_;  // temp dir: data/ and etcd.log
  std::string data_dir_;
  std::string log_path_;
  int client_port_ = 0;
  int peer_port_ = 0;
  int metrics_port_ = 0;
  Tls tls_;  // cert_file empty: plaintext
  pid_t pid_ = -1;
  bool started_ = false;  // once: the ports are known to clients
};

}  // namespace kf::meta::testing
