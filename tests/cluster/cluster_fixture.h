// The shared fixture of the distributed-service acceptance tests (issue 4): a real etcd,
// `kingfisher run coord` and three `kingfisher run node` processes sharing one data dir
// (lease TTL 2 s, balance interval 1 s), driven through the public client library bootstrapped
// from the coordinator; plus a load generator and the checks every scenario ends with.
//
// Thread-safety: the fixture is driven by the test's thread; Load is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "kingfisher/client.h"
#include "kingfisher/consumer.h"
#include "kingfisher/producer.h"
#include "server_process.h"
#include "storage/meta/testing/etcd_process.h"

namespace kf::cluster_testing {

inline constexpr char kCluster[] = "kc";
inline constexpr int kPChannels = 3;
inline constexpr int kNodes = 3;

std::string PChannel(int i);
std::string VChannel(int i);

// The term that wrote a consumed message (its `_wt`); 0 if it carries none.
int64_t TermOf(const kingfisher::ConsumedMessage& m);

// Producers appending to some pchannels until Stop: per pchannel one thread keeping up to
// `in_flight` appends outstanding (AppendAsync), payloads "p<p>-m<i>" on VChannel(p). Every
// append and its outcome is recorded; a failed append does not stop the load.
class Load {
 public:
  struct Op {
    std::string payload;
    absl::Time done = absl::InfiniteFuture();  // while in flight
    absl::StatusOr<kingfisher::AppendResult> result = absl::UnknownError("in flight");
  };

  Load(kingfisher::Client* client, std::vector<int> pchannels, int in_flight = 1);
  ~Load();  // Stop()

  // Stops issuing and waits until every issued append completed (none is cancelled: each
  // runs to its result or its deadline). Idempotent.
  void Stop();
  // Waits until `n` appends to pchannel `p` (p < 0: to all) were acknowledged; false at the
  // deadline.
  bool WaitAcked(int p, int64_t n, absl::Duration timeout) const;
  // Appends issued to pchannel `p` so far: the index the next one gets in Ops(p).
  size_t issued(int p) const;
  // Waits until `n` appends to `p` with index >= `first` (issued after issued(p) returned
  // `first`) were acknowledged; false at the deadline.
  bool WaitAckedFrom(int p, size_t first, int64_t n, absl::Duration timeout) const;
  // Every append of pchannel `p` so far, in issue order.
  std::vector<Op> Ops(int p) const;
  // The payloads of `p`'s appends in flight right now.
  std::vector<std::string> InFlight(int p) const;

 private:
  void Run(int p);

  kingfisher::Client* const client_;
  const int in_flight_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::map<int, std::vector<Op>> ops_ ABSL_GUARDED_BY(mu_);
  std::map<int, int> outstanding_ ABSL_GUARDED_BY(mu_);
  std::map<int, int64_t> acked_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override;
  // The nodes' WAL backend: "local" (their shared data dir), "objectstore" (a local object
  // store in the test's dir, the segment metadata in etcd) or "quorum" (3 `kingfisher run
  // logstore` processes found through their etcd registrations).
  virtual std::string WalBackend() const { return "local"; }
  // More flags for every node.
  virtual std::vector<std::string> NodeArgs() const { return {}; }
  // More flags for every process (coordinator, logstores, nodes), and the TLS of the clients
  // Connect makes: a cluster over TLS (docs/security.md).
  virtual std::vector<std::string> ServerTlsArgs() const { return {}; }
  virtual kingfisher::TlsOptions ClientTls() const { return {}; }
  // etcd over TLS (its endpoint is then https://; the processes need --etcd-* flags).
  virtual std::optional<kf::meta::testing::EtcdProcess::Tls> EtcdTls() const {
    return std::nullopt;
  }

  // A client of the coordinator's endpoint with a generous append timeout.
  std::unique_ptr<kingfisher::Client> Connect(
      kingfisher::Duration attempt_timeout = std::chrono::seconds(10),
      kingfisher::Duration append_timeout = std::chrono::seconds(60));

  // Polls the coordinator's GetStatus until `pred` holds; false at the deadline.
  bool WaitStatus(const std::function<bool(const kingfisher::ClusterStatus&)>& pred,
                  absl::Duration timeout);
  // True once every pchannel is ASSIGNED to a node (per the coordinator).
  bool WaitAllAssigned(absl::Duration timeout);
  // True once every pchannel is ASSIGNED and every node owns exactly one: the balancer has
  // nothing left to move, so later moves are caused by the test.
  bool WaitSettled(absl::Duration timeout);
  // pchannel -> {node, term} per the coordinator.
  std::map<std::string, std::pair<int64_t, int64_t>> Owners();
  // Polls node `node`'s /metrics until it no longer serves pchannel `p` at `term` (it learned
  // it lost it); false at the deadline, with the last scrape in `*metrics`.
  bool WaitStopsServing(int node, int p, int64_t term, absl::Duration timeout,
                        std::string* metrics);

  // Every message of `vchannel` from the beginning (TimeTicks excluded), until `want` arrived.
  std::vector<kingfisher::ConsumedMessage> ReadAll(const std::string& vchannel, size_t want);
  // Appends a last message to pchannel `p` (must succeed) and reads the whole pchannel from the
  // beginning up to it: every message in delivery order, TimeTicks included.
  std::vector<kingfisher::ConsumedMessage> ReadPChannelToEnd(int p);

  meta::testing::EtcdProcess etcd_;
  testing::TempDir dir_;
  std::unique_ptr<testing::ServerProcess> coord_;
  std::map<int, std::unique_ptr<testing::ServerProcess>> nodes_;
  std::vector<std::unique_ptr<testing::ServerProcess>> logstores_;  // quorum only
  std::unique_ptr<kingfisher::Client> client_;
};

// ClusterTest on the WAL backend the test parameter names.
class ClusterBackendTest : public ClusterTest, public ::testing::WithParamInterface<std::string> {
 protected:
  std::string WalBackend() const override { return GetParam(); }
};

// The term at which a node's /metrics (kf_pchannel_term) says it serves pchannel `p`; nullopt
// when it does not serve it.
std::optional<int64_t> ServedTerm(const std::string& metrics, int p);

// Every acknowledged append of `ops` is in `log` exactly once, a failed one at most once, and
// no `_ik` or payload appears twice (`log` as ReadPChannelToEnd returns it).
void ExpectExactlyOnce(const std::vector<kingfisher::ConsumedMessage>& log,
                       const std::vector<Load::Op>& ops, const std::string& what);
// Timeticks strictly increase and terms (`_wt`) never decrease in delivery order.
void ExpectOrdered(const std::vector<kingfisher::ConsumedMessage>& log, const std::string& what);

}  // namespace kf::cluster_testing
