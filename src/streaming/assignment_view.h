// AssignmentView: the cluster's pchannel assignments, live nodes and coordinator as the
// metadata store has them (docs/cluster.md), kept current by one watch of the cluster root.
//
// The coordinator decides from it, a streaming node follows it (opens and closes WALs), and
// both serve discovery (WatchAssignments) from it. A Snapshot is immutable and versioned by
// the store revision it reflects; the version grows only when an assignment, a node or the
// coordinator changes (the TSO mark, also under the root, does not count).
//
// The view lists the root, then watches it from the listed revision + 1, so no change is
// missed or applied twice. If the watch reports that its start was compacted away (or fails
// for good), a background thread lists again (with backoff) and re-watches; Current() stays
// the last good snapshot meanwhile. A key whose value does not parse is left out of the
// snapshot and named in `corrupt`: whoever would write it must not guess (the term would be lost).
//
// Thread-safety: thread-safe. Ownership: borrows the store, which must outlive the view.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kingfisher/v1/streaming.pb.h"
#include "storage/meta/meta_store.h"
#include "streaming/cluster_meta.h"

namespace kf::streaming {

struct AssignmentSnapshot {
  struct PChannel {
    kingfisher::v1::PChannelAssignment assignment;
    int64_t mod_revision = 0;  // for CAS writes of this key
  };
  struct Node {
    kingfisher::v1::NodeInfo info;
    int64_t mod_revision = 0;
  };

  int64_t version = 0;                        // the store revision reflected
  std::map<std::string, PChannel> pchannels;  // by name
  std::map<int64_t, Node> nodes;              // live (registered) nodes by id
  std::optional<kingfisher::v1::CoordinatorInfo> coord;
  std::map<std::string, std::string> corrupt;  // key -> why it was left out

  // Discovery's wire form: every pchannel and node, sorted.
  kingfisher::v1::AssignmentSnapshot ToProto() const;
};

class AssignmentView {
 public:
  struct Options {
    absl::Duration call_timeout = absl::Seconds(5);  // per store call
    absl::Duration relist_backoff = absl::Milliseconds(100);
    absl::Duration relist_backoff_max = absl::Seconds(2);
  };

  // Lists and starts watching; fails if the first listing fails before `deadline`.
  static absl::StatusOr<std::unique_ptr<AssignmentView>> Start(meta::MetaStore* store,
                                                               ClusterKeys keys, Options options,
                                                               absl::Time deadline);
  ~AssignmentView();
  AssignmentView(const AssignmentView&) = delete;
  AssignmentView& operator=(const AssignmentView&) = delete;

  std::shared_ptr<const AssignmentSnapshot> Current() const;

  // The latest snapshot once its version exceeds `version`, or the current one when the
  // deadline passes first (compare its version to tell).
  std::shared_ptr<const AssignmentSnapshot> WaitNewer(int64_t version, absl::Time deadline) const;
  // The same, also returning (the current snapshot) as soon as `stop` is requested, so a
  // background thread can wait for changes and still stop at once.
  std::shared_ptr<const AssignmentSnapshot> WaitNewer(int64_t version, absl::Time deadline,
                                                      std::stop_token stop) const;

  const ClusterKeys& keys() const { return keys_; }

 private:
  AssignmentView(meta::MetaStore* store, ClusterKeys keys, Options options);

  // Lists the root into a fresh snapshot and (re)starts the watch after it.
  absl::Status ListAndWatch(absl::Time deadline);
  void OnWatch(uint64_t generation, const meta::WatchResponse& response);
  // Applies one key's new value (or deletion) to `s`; false if the key is not one we track.
  bool Apply(AssignmentSnapshot* s, const meta::KeyValue& kv, bool deleted) const;
  void RelistLoop(std::stop_token stop);

  meta::MetaStore* const store_;
  const ClusterKeys keys_;
  const Options options_;

  mutable absl::Mutex mu_;
  std::shared_ptr<const AssignmentSnapshot> current_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // of the live watch; stale callbacks ignored
  bool relist_needed_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  absl::Mutex watch_mu_;  // serialises replacing the watch
  std::unique_ptr<meta::WatchHandle> watch_ ABSL_GUARDED_BY(watch_mu_);
  std::jthread relister_;
};

}  // namespace kf::streaming
