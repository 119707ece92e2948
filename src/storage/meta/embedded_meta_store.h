// EmbeddedMetaStore: the MetaStore of standalone mode, in process, persisted under a
// directory of the data dir.
//
// State lives in a KvState; every change is first appended to a log and fdatasynced
// (meta_log.h), then applied, so a call that returned OK survives a crash and readers never
// see an undurable change. When the log outgrows Options::snapshot_threshold_bytes the whole
// state is written as a snapshot (temp file, fsync, rename, fsync dir) and a new log started.
// Open replays snapshot + log, cuts a torn tail and fails with DATA_LOSS on corruption before
// it. Mutations are serialised (one fdatasync each, no group commit: metadata writes are rare
// and small; bench/meta_store_bench.cc measures them).
//
// Leases: the TTL runs from the grant or the last keepalive; a background thread revokes
// expired leases (deleting their keys at one revision, like etcd). TTLs are not persisted as
// deadlines: after a restart every lease gets a fresh full TTL, as etcd does on leader change.
//
// Watches replay from an in-memory history of the last Options::history_limit revisions;
// after a restart the history starts at the snapshot's revision (older starts get
// OUT_OF_RANGE). One dispatcher thread calls every watch callback.
//
// Thread-safety: thread-safe. Ownership: owns its files and threads; borrows Options::fs,
// which must outlive the store; WatchHandles must be destroyed before the store.
// Errors: as MetaStore; after an I/O error every later mutation fails with that error
// (sticky), reads keep working.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "storage/fs/file_system.h"
#include "storage/meta/kv_state.h"
#include "storage/meta/meta_log.h"
#include "storage/meta/meta_store.h"

namespace kf::meta {

class EmbeddedMetaStore final : public MetaStore {
 public:
  struct Options {
    fs::FileSystem* fs = nullptr;                 // null = the POSIX file system
    uint64_t snapshot_threshold_bytes = 4 << 20;  // log size that triggers a snapshot
    size_t history_limit = 10000;                 // revisions of watch history kept
  };

  // Opens (creating if needed) the store in `dir`.
  static absl::StatusOr<std::unique_ptr<EmbeddedMetaStore>> Open(const std::string& dir,
                                                                 Options options);
  ~EmbeddedMetaStore() override;

  absl::StatusOr<GetResult> Get(std::string_view key, absl::Time deadline) override;
  absl::StatusOr<RangeResult> Range(std::string_view prefix, absl::Time deadline,
                                    int64_t limit = 0) override;
  absl::StatusOr<int64_t> Put(std::string_view key, std::string_view value, absl::Time deadline,
                              LeaseId lease = kNoLease) override;
  absl::StatusOr<DeleteResult> Delete(std::string_view key, absl::Time deadline) override;
  absl::StatusOr<DeleteResult> DeletePrefix(std::string_view prefix, absl::Time deadline) override;
  absl::StatusOr<TxnResult> Txn(const std::vector<Compare>& compares,
                                const std::vector<Op>& then_ops, const std::vector<Op>& else_ops,
                                absl::Time deadline) override;
  absl::StatusOr<LeaseGrant> GrantLease(absl::Duration ttl, absl::Time deadline) override;
  absl::StatusOr<absl::Duration> KeepAliveOnce(LeaseId lease, absl::Time deadline) override;
  absl::Status RevokeLease(LeaseId lease, absl::Time deadline) override;
  absl::StatusOr<std::unique_ptr<WatchHandle>> Watch(std::string_view prefix,
                                                     int64_t start_revision, WatchCallback callback,
                                                     absl::Time deadline) override;
  absl::Status Compact(int64_t revision, absl::Time deadline) override;

 private:
  struct Watcher;
  class Handle;

  EmbeddedMetaStore(std::string dir, Options options);

  absl::Status Recover();
  // Takes write_mu_ by `deadline` and returns true; false (and not held) otherwise.
  bool LockWriter(absl::Time deadline) ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true, write_mu_);
  // Logs `m` durably, applies it, snapshots if the log is due.
  absl::Status Commit(const Mutation& m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::Status SnapshotLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  void CancelWatch(const std::shared_ptr<Watcher>& w);

  bool DispatchReady() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void DispatchLoop();
  void ExpiryLoop();

  const std::string dir_;
  const Options options_;
  fs::FileSystem* const fs_;

  // Serialises mutations (plan, log, apply) and owns the log; taken before mu_.
  absl::Mutex write_mu_;
  std::unique_ptr<MetaLogWriter> log_ ABSL_GUARDED_BY(write_mu_);
  absl::Status write_error_ ABSL_GUARDED_BY(write_mu_);  // sticky

  // Guards the state seen by readers, watches and leases.
  mutable absl::Mutex mu_;
  KvState state_ ABSL_GUARDED_BY(mu_);
  std::map<LeaseId, absl::Time> lease_expiry_ ABSL_GUARDED_BY(mu_);
  bool expiry_changed_ ABSL_GUARDED_BY(mu_) = false;
  std::map<uint64_t, std::shared_ptr<Watcher>> watchers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_watcher_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::thread::id dispatcher_id_;
  std::jthread dispatcher_;
  std::jthread expirer_;
};

}  // namespace kf::meta
