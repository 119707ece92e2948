// StreamingNode: the streaming-node role (docs/cluster.md "Streaming node"): registers itself,
// follows the assignments in the metadata store, opens the WALs assigned to it at their term
// and closes the ones it lost. The RPC layer serves requests through registry().
//
// Following: a reconcile thread wakes on every new AssignmentSnapshot (and every
// Options::reconcile_interval, to retry what failed) and compares it with what is open:
//   - assigned here (ASSIGNING or ASSIGNED) at a term above the open one, or not open: open the
//     WAL at that term (fence-then-seal, recovery), serve it, then CAS ASSIGNING -> ASSIGNED;
//   - open here but assigned elsewhere, at a higher term, unassigned or gone: stop serving it
//     (new requests get CHANNEL_NOT_EXIST) and close it (in-flight appends finish or fail).
// When the session is lost (NodeSession) every WAL is closed at once and nothing is opened until
// the session registered again; then the next snapshots reopen what is still assigned here.
//
// Thread-safety: thread-safe. Ownership: borrows the store, view, registry, opener and TSO
// (they must outlive the node); owns its session and WALs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "query/query_registry.h"
#include "storage/meta/meta_store.h"
#include "streaming/assignment_view.h"
#include "streaming/node/node_session.h"
#include "streaming/node/wal_registry.h"
#include "wal/backend.h"
#include "wal/wal.h"

namespace kf::streaming {

class StreamingNode {
 public:
  struct Options {
    int64_t node_id = 0;
    std::string address;                 // where clients reach this node
    std::string cluster = "kf";          // metadata key root kf/<cluster>/
    std::vector<std::string> pchannels;  // every pchannel of the cluster
    wal::WalOpener* opener = nullptr;    // borrowed
    // Borrowed, shared with the process: the view also feeds discovery and the TSO client, the
    // registry is what the RPC layer serves from.
    const AssignmentView* view = nullptr;
    streaming::node::DynamicWalRegistry* registry = nullptr;
    // Borrowed: every WAL opened here is followed for searches (docs/search.md); null: none.
    query::QueryRegistry* queries = nullptr;
    wal::WalOptions wal;  // template for every WAL (pchannel is set per WAL)
    absl::Duration lease_ttl = absl::Seconds(10);
    absl::Duration call_timeout = absl::Seconds(5);
    absl::Duration reconcile_interval = absl::Seconds(1);
  };

  // Lists the assignments, registers and starts following. Fails if the store cannot be
  // reached before `deadline`.
  static absl::StatusOr<std::unique_ptr<StreamingNode>> Start(meta::MetaStore* store,
                                                              Options options, absl::Time deadline);
  // Stops following, closes every WAL, then revokes the lease.
  ~StreamingNode();

  // Graceful exit (SIGTERM): marks the node DRAINING, so the coordinator moves its pchannels
  // away, and waits until none is open here. DEADLINE_EXCEEDED if some are still open at the
  // deadline (the destructor then closes them).
  absl::Status Drain(absl::Time deadline);

  // Waits until at least `n` pchannels are open here (standalone, which owns them all, serves
  // only then). Returns early with the error of a failed open (e.g. DATA_LOSS from recovery:
  // the reconcile loop keeps retrying, but a single-node caller cannot wait it out);
  // DEADLINE_EXCEEDED at the deadline.
  absl::Status WaitServing(size_t n, absl::Time deadline);

 private:
  explicit StreamingNode(Options options);

  void ReconcileLoop(std::stop_token stop);
  void Reconcile(const AssignmentSnapshot& snapshot);
  // Opens `pchannel` at `term` and serves it (closing an older term first).
  absl::Status Open(const std::string& pchannel, Term term);
  void Close(const std::string& pchannel, std::string_view why);
  void CloseAll(std::string_view why);
  // ASSIGNING -> ASSIGNED once the WAL is open (a lost race is fine: the next snapshot decides).
  void ConfirmAssigned(const AssignmentSnapshot::PChannel& p);

  meta::MetaStore* store_ = nullptr;
  const Options options_;
  const ClusterKeys keys_;
  std::unique_ptr<NodeSession> session_;

  absl::Mutex mu_;  // serialises opening and closing (reconcile thread vs session loss)
  std::map<std::string, std::shared_ptr<wal::Wal>> open_ ABSL_GUARDED_BY(mu_);
  absl::Status open_error_ ABSL_GUARDED_BY(mu_);  // of the last failed Open, until one succeeds
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::jthread reconciler_;
};

}  // namespace kf::streaming
