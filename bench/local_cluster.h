// LocalCluster: the distributed service as real processes on loopback, as tests/cluster starts
// it — an etcd (meta::testing::EtcdProcess), `kingfisher run coord` and `nodes` processes of
// `kingfisher run node` sharing one data dir (testing::ServerProcess) — and a Client
// bootstrapped from the coordinator. For cluster_bench's distributed path and its failover.
//
// Thread-safety: one thread at a time drives the processes (KillNode may be called from
// another thread while the driving thread waits for it); client() and Status() are thread-safe.
// Ownership: owns the processes (SIGKILLed on destruction) and the client.
// Errors: the constructor ends the process (kf::bench::Die) when a process does not start.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kingfisher/client.h"
#include "server_process.h"
#include "storage/meta/testing/etcd_process.h"

namespace kf::bench {

struct LocalClusterOptions {
  std::string dir;  // etcd's, the coordinator's and the nodes' data go under it
  std::string cluster = "kb";
  int pchannels = 3;
  int nodes = 3;
  double lease_ttl = 2;  // seconds, coordinator and nodes (--lease-ttl)
};

class LocalCluster {
 public:
  explicit LocalCluster(LocalClusterOptions options);
  ~LocalCluster();

  kingfisher::Client& client() { return *client_; }
  // `<cluster>-dml_<i>`.
  std::vector<std::string> PChannels() const;
  absl::StatusOr<kingfisher::ClusterStatus> Status() { return client_->GetStatus(); }
  std::string etcd_endpoint() const { return etcd_.endpoint(); }

  // Waits until every node is ONLINE, every pchannel ASSIGNED and the load balanced (no node
  // owns two more than another: the balancer has nothing left to move). False at the deadline.
  bool WaitSteady(absl::Duration timeout);

  // kill -9 of node `id` (reaped before it returns).
  void KillNode(int64_t id);
  // Starts node `id` again (same address and data dir); false if it does not come up.
  bool RestartNode(int64_t id);

 private:
  LocalClusterOptions options_;
  meta::testing::EtcdProcess etcd_;
  std::unique_ptr<testing::ServerProcess> coord_;
  std::map<int64_t, std::unique_ptr<testing::ServerProcess>> nodes_;
  std::unique_ptr<kingfisher::Client> client_;
};

}  // namespace kf::bench
