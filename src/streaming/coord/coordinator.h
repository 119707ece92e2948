// Coordinator: the cluster's coordinator role (docs/cluster.md "Coordinator") over any
// MetaStore — etcd for `kingfisher run coord`, the embedded store in a single process.
//
// Several may run; the one holding `kf/<cluster>/coord` acts, the others stand by:
//   - Election: Txn(coord absent -> put CoordinatorInfo on a fresh lease); the lease is kept
//     alive every ttl/3. Leadership is trusted only until (send time of the last successful
//     keepalive + TTL): past that, or on an oracle found deposed, the coordinator stops acting
//     (TSO refuses, no writes) until a keepalive and a read of `coord` confirm it again; a
//     keepalive answering NOT_FOUND (lease gone) sends it back to the election.
//   - While acting: the TimestampOracle serves; every configured pchannel missing in the store
//     is created UNINITIALIZED; Balance runs on every new AssignmentView snapshot and every
//     balance_interval (rebalancing moves at most once per interval), each move ONE
//     compare-and-swap on the pchannel key's mod_revision that also requires `coord` to be
//     this coordinator's key (its create_revision), so a deposed coordinator can never write.
//   - A write that lost its CAS is not an error: the next snapshot shows what changed and the
//     round runs again. A write of unknown outcome (UNAVAILABLE, DEADLINE_EXCEEDED) is never
//     retried blindly: the round ends and the view shows whether it landed (or a retry round
//     runs after a backoff).
//   - Every assignment change is logged at info (pchannel, old/new node, term, reason).
//   - Options::on_acting / on_not_acting tell the owner when acting starts and ends (the
//     DDL broadcaster lives for one such term, coord/ddl_host.h).
//   - Stop (or destruction) revokes the lease, so a standby is elected at once.
//
// Thread-safety: thread-safe. Ownership: borrows the store (must outlive the coordinator); owns
// its AssignmentView, TimestampOracle and one background thread. view() and oracle() stay
// valid for the coordinator's lifetime (the oracle refuses while this coordinator is not
// acting). Errors: Create fails when the cluster cannot be listed by the deadline; afterwards
// store failures are logged and retried with backoff, never fatal.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/meta/meta_store.h"
#include "streaming/assignment_view.h"
#include "streaming/cluster_meta.h"
#include "streaming/coord/tso_oracle.h"

namespace kf::streaming {

class Coordinator {
 public:
  struct Options {
    std::string cluster = "kf";
    std::vector<std::string> pchannels;  // the pchannels this cluster has
    absl::Duration lease_ttl = absl::Seconds(10);
    absl::Duration balance_interval = absl::Seconds(10);
    absl::Duration call_timeout = absl::Seconds(5);  // per store call
    absl::Duration retry_backoff = absl::Milliseconds(100);
    absl::Duration retry_backoff_max = absl::Seconds(2);
    // The caller guarantees that no other coordinator of this cluster runs (standalone: the
    // data-dir lock). A `coord` key found when campaigning is then a leftover of an earlier
    // run whose lease has not expired yet (the embedded store restarts every lease with a
    // full TTL): its lease is revoked at once instead of waiting out the TTL.
    bool exclusive = false;
    TimestampOracle::Options tso;  // on_deposed and call_timeout are set by the coordinator
    AssignmentView::Options view;
    // Run on the coordinator's thread when it starts acting, with the create_revision of its
    // `coord` key (the fence every write of this term must carry), and when it stops acting
    // (deposed, lease lost or unconfirmed past its TTL, Stop). Calls alternate, starting with
    // on_acting; every on_acting is followed by one on_not_acting before Stop returns. They
    // must not block: the balancing loop and the lease keepalive wait for them.
    std::function<void(int64_t coord_create_revision)> on_acting;
    std::function<void()> on_not_acting;
  };

  // Lists the cluster (the AssignmentView) and prepares the oracle; does not campaign yet.
  static absl::StatusOr<std::unique_ptr<Coordinator>> Create(meta::MetaStore* store,
                                                             Options options, absl::Time deadline);
  // Stop().
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Enters the election on the background thread, publishing `address` (host:port of this
  // process's StreamingCoord service) in CoordinatorInfo. Once.
  void Start(std::string address);
  // Stops acting, revokes the lease (bounded by call_timeout) and joins the thread. Idempotent.
  void Stop();

  const AssignmentView* view() const { return view_.get(); }
  TimestampOracle* oracle() const { return oracle_.get(); }
  const ClusterKeys& keys() const { return keys_; }

  // True while this coordinator acts as the leader.
  bool acting() const;
  // Waits until acting() == `acting` or the deadline; returns whether it holds.
  bool WaitActing(bool acting, absl::Time deadline) const;
  // Waits until a balancing round completed (every planned write applied) on a snapshot of
  // version >= `version`, i.e. every change up to that store revision was acted upon; false at
  // the deadline.
  bool WaitBalanced(int64_t version, absl::Time deadline) const;

 private:
  struct Leadership {
    meta::LeaseId lease = meta::kNoLease;
    int64_t create_revision = 0;  // of our `coord` key: the fencing token of our writes
    absl::Duration ttl;
    absl::Time valid_until;  // trusted until then without a newer keepalive
  };
  struct RoundResult {
    bool ok = true;           // false: a store call failed; retry after a backoff
    bool complete = true;     // every planned write was applied
    bool lost = false;        // `coord` is no longer ours
    bool rebalanced = false;  // a rebalancing move was written
  };

  Coordinator(meta::MetaStore* store, Options options);

  void Run(std::stop_token stop);
  std::optional<Leadership> Campaign(std::stop_token stop);
  void Lead(std::stop_token stop, Leadership leadership);
  // Creates missing pchannels and applies Balance's moves for `snapshot`.
  RoundResult Reconcile(const AssignmentSnapshot& snapshot, const Leadership& leadership,
                        bool allow_rebalance);
  enum class WriteOutcome {
    kWritten,
    kConflict,  // the pchannel changed since the snapshot (not an error)
    kUnknown,   // the store failed: it may or may not have been written
    kLost,      // `coord` is no longer ours
  };
  struct PChannelWrite {
    int64_t mod_revision = 0;  // the CAS condition (0: create if absent)
    kingfisher::v1::PChannelAssignment value;
  };
  // One atomic CAS write of pchannels (each on its mod_revision), guarded by our `coord` key.
  WriteOutcome Write(const std::vector<PChannelWrite>& writes, const Leadership& leadership);
  static RoundResult Ended(WriteOutcome w, RoundResult so_far);
  // Whether `coord` is still the key of `leadership` (a store read).
  absl::StatusOr<bool> StillLeader(const Leadership& leadership);
  void LogAnomalies(const AssignmentSnapshot& snapshot);
  // Publishes acting() and runs the hooks on a change. `create_revision`: the leadership's
  // (with acting = true).
  void SetActing(bool acting, int64_t create_revision = 0);

  // Waits for a snapshot newer than `version`, the deadline, stop, or Nudge.
  std::shared_ptr<const AssignmentSnapshot> Wait(int64_t version, absl::Time deadline,
                                                 std::stop_token stop);
  // Wakes Wait (the oracle found itself deposed: re-check leadership now).
  void Nudge();
  // Sleeps for `d` unless stopped first; false when stopped.
  static bool Sleep(absl::Duration d, std::stop_token stop);

  meta::MetaStore* const store_;
  const Options options_;
  const ClusterKeys keys_;
  std::unique_ptr<AssignmentView> view_;
  std::unique_ptr<TimestampOracle> oracle_;

  std::string address_;  // set by Start, read by the thread only afterwards

  mutable absl::Mutex mu_;
  bool acting_ ABSL_GUARDED_BY(mu_) = false;
  int64_t balanced_version_ ABSL_GUARDED_BY(mu_) = -1;
  bool nudged_ ABSL_GUARDED_BY(mu_) = false;
  std::stop_source* wake_ ABSL_GUARDED_BY(mu_) = nullptr;  // the running Wait's

  // Thread-only state: what was already logged once.
  std::set<std::string> logged_anomalies_;

  std::jthread thread_;
};

}  // namespace kf::streaming
