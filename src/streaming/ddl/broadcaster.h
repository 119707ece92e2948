// Broadcaster: writes one logical DDL message to many vchannels
// (docs/semantics.md §5, docs/ddl.md).
//
// Broadcast(locks, request):
//   1. the caller holds the request's resource-key locks (Lock);
//   2. a broadcast id is drawn from the counter `broadcast/next_id` (a fenced CAS per block of
//      ids, id_block.h);
//   3. `_bh` = {id, vchannels, resource keys} is set, `wal.broadcast` starts and its context
//      is injected into `_tc` (an existing caller `_tc` is kept);
//   4. the task (kingfisher.v1.BroadcastTask, PENDING) is persisted at `broadcast/task/<id>`,
//      in one transaction with the request's own writes (e.g. the catalog's DROPPING mark),
//      before any append;
//   5. every vchannel gets its copy (`_vc`, `_ik` = "bc<id>:<index>") through the
//      BroadcastAppender, concurrently; failures are retried with backoff until all succeed;
//      the acks of a round that leaves vchannels un-acked are persisted in the task (a round
//      that completes them goes straight to step 6, which writes them with DONE);
//   6. the ACK callback registered for the message type runs under `wal.bc_callback`; its
//      writes commit in ONE transaction with the task's transition to DONE (ack_callback.h);
//   7. the locks are released; DONE tasks stay as tombstones, bounded by count and age.
// Steps 4-7 run on a worker thread owned by the broadcaster: once a task may have been
// persisted it is driven to DONE whatever happens to the caller. Recover() (on taking office)
// resumes every task that is not DONE under its original `_tc`; appends are idempotent by
// `_ik` and the callback commits once, so a crash at any point applies each DDL exactly once.
//
// Every write is fenced by the coordinator's `coord` key (FencedStore). A deposed broadcaster
// stops driving its tasks (the next coordinator recovers them) and releases their locks.
//
// Thread-safety: thread-safe. Ownership: borrows the store and the appender (both must outlive
// it); owns one worker thread per task in progress. RegisterCallback before Recover.
// Errors of Lock/Broadcast:
//   UNAVAILABLE         not recovered yet, stopped, or deposed (a persisted task is then
//                       completed by the next coordinator), or the store is unreachable
//                       before anything was persisted;
//   DEADLINE_EXCEEDED   the deadline passed: waiting for a lock (nothing done), or after the
//                       task may have been persisted (it is driven to completion regardless);
//   RESOURCE_ACQUIRED   (ABORTED) non-blocking Lock on a held key;
//   INVALID_ARGUMENT    not a DDL type, `_vc`/`_ik`/`_bh` already set, no or duplicate or
//                       malformed vchannels, no locks held;
//   ABORTED             the request's own compares failed: nothing was written.
// Recover: DATA_LOSS for a task that does not parse; INTERNAL if two unfinished tasks hold
// the same key; the store's errors.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kingfisher/v1/ddl.pb.h"
#include "message/message.h"
#include "message/message_type.h"
#include "storage/meta/meta_store.h"
#include "streaming/cluster_meta.h"
#include "streaming/ddl/ack_callback.h"
#include "streaming/ddl/broadcast_appender.h"
#include "streaming/ddl/fenced_store.h"
#include "streaming/ddl/id_block.h"
#include "streaming/ddl/resource_key_locks.h"
#include "trace/context.h"

namespace kf::streaming::ddl {

class Broadcaster {
 public:
  struct Options {
    absl::Duration call_timeout = absl::Seconds(5);     // per store call
    absl::Duration append_timeout = absl::Seconds(10);  // per append attempt
    absl::Duration retry_backoff = absl::Milliseconds(50);
    absl::Duration retry_backoff_max = absl::Seconds(5);
    // Tombstones (DONE tasks) kept: at most this many, none older than max_age. Trimming
    // deletes down to 7/8 of the count, so it runs once per count/8 broadcasts, in batches.
    size_t tombstone_max_count = 1024;
    absl::Duration tombstone_max_age = absl::Hours(1);
    // Broadcast ids reserved per store transaction (id_block.h).
    uint64_t id_block_size = 64;
  };

  struct Request {
    trace::Context ctx;  // the caller's request: parent of `wal.broadcast`
    MutableMessage message;
    std::vector<std::string> vchannels;
    // Written in the task's transaction (the catalog's CREATING / DROPPING marks).
    AckWrites with_task;
  };

  struct Result {
    uint64_t broadcast_id = 0;
    std::vector<kingfisher::v1::BroadcastAck> acks;  // one per vchannel, in request order
  };

  // `coord_create_revision`: the create_revision of this coordinator's `coord` key.
  Broadcaster(meta::MetaStore* store, const ClusterKeys& keys, int64_t coord_create_revision,
              BroadcastAppender* appender, Options options);
  // Stop().
  ~Broadcaster();
  Broadcaster(const Broadcaster&) = delete;
  Broadcaster& operator=(const Broadcaster&) = delete;

  // The callback run when a broadcast of `type` is acked everywhere; types without one just
  // become DONE.
  void RegisterCallback(MessageType type, AckCallback callback);

  // Loads every task that is not DONE, re-takes its locks and resumes it (returns without
  // waiting for them); trims tombstones. Lock/Broadcast are refused until it succeeded. Once.
  absl::Status Recover(absl::Time deadline);

  absl::StatusOr<ResourceKeyLocks::Guard> Lock(std::vector<ResourceKey> keys, bool blocking,
                                               absl::Time deadline);
  // Runs the broadcast under `locks` (released when its task is DONE or failed) and waits for
  // its callback to commit, until `deadline`.
  absl::StatusOr<Result> Broadcast(ResourceKeyLocks::Guard locks, Request request,
                                   absl::Time deadline);

  // Waits until no task is in progress; false at the deadline.
  bool WaitIdle(absl::Time deadline);
  // Stops every worker (tasks stay as persisted) and refuses new work. Idempotent.
  void Stop();

  const FencedStore& store() const { return store_; }

 private:
  struct Task;
  struct Tombstone {
    std::string key;
    int64_t mod_revision = 0;
    int64_t done_time_ms = 0;
  };

  absl::Status CheckRequest(const ResourceKeyLocks::Guard& locks, const Request& r) const;
  void Start(std::shared_ptr<Task> task) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Run(std::stop_token stop, const std::shared_ptr<Task>& task);
  absl::Status Drive(std::stop_token stop, Task& task);
  absl::Status Persist(std::stop_token stop, Task& task);
  absl::Status AppendRound(std::stop_token stop, Task& task);
  // Replaces the task with `updated` if it is unchanged since read, with `extra` in the same
  // transaction. ABORTED: a compare failed; FAILED_PRECONDITION: deposed; or the store's
  // error (unknown outcome).
  absl::Status Rewrite(Task& task, kingfisher::v1::BroadcastTask updated, AckWrites extra);
  absl::Status SaveAcks(Task& task, kingfisher::v1::BroadcastTask updated);
  absl::Status Complete(std::stop_token stop, Task& task);
  // Re-reads the task from the store.
  absl::Status Reload(Task& task);
  // Deletes the tombstones beyond the count or age bounds (known from tombstones_: no listing).
  void TrimTombstones();
  // Waits for the backoff; UNAVAILABLE when stopped first.
  absl::Status Pause(std::stop_token stop, absl::Duration d, uint64_t id);
  AckCallback CallbackFor(MessageType type) const;

  const FencedStore store_;
  const ClusterKeys keys_;
  IdBlock ids_;
  BroadcastAppender* const appender_;
  const Options options_;
  ResourceKeyLocks locks_;

  mutable absl::Mutex mu_;
  std::map<MessageType, AckCallback> callbacks_ ABSL_GUARDED_BY(mu_);
  bool recovered_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<uint64_t, std::shared_ptr<Task>> running_ ABSL_GUARDED_BY(mu_);
  // One per task; a finished worker (its id in finished_) is joined by the next Start or Stop.
  std::map<uint64_t, std::jthread> workers_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> finished_ ABSL_GUARDED_BY(mu_);
  // The DONE tasks in the store, by id (loaded by Recover, added as tasks complete).
  std::map<uint64_t, Tombstone> tombstones_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::streaming::ddl
