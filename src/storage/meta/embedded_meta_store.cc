#include "storage/meta/embedded_meta_store.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/status_macros.h"

namespace kf::meta {
namespace {

// Events handed to one callback call at most (whole revisions, so it may be exceeded).
constexpr size_t kMaxBatchEvents = 1000;

absl::Status CheckDeadline(absl::Time deadline) {
  if (absl::Now() >= deadline) return absl::DeadlineExceededError("metadata store: deadline");
  return absl::OkStatus();
}

absl::Status WriterDeadlineError() {
  return absl::DeadlineExceededError("metadata store: deadline waiting for the writer");
}

// Releases write_mu_ taken by a successful LockWriter at scope exit.
class ABSL_SCOPED_LOCKABLE WriterUnlock {
 public:
  explicit WriterUnlock(absl::Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) : mu_(mu) {}
  ~WriterUnlock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  WriterUnlock(const WriterUnlock&) = delete;
  WriterUnlock& operator=(const WriterUnlock&) = delete;

 private:
  absl::Mutex* const mu_;
};

absl::Status CheckKey(std::string_view key) {
  if (key.empty()) return absl::InvalidArgumentError("metadata store: empty key");
  return absl::OkStatus();
}

// Parses "meta-<seq>.log"; 0 if `name` is not a log file.
uint64_t LogSeqOf(const std::string& name) {
  constexpr std::string_view kPrefix = "meta-", kSuffix = ".log";
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.rfind(kPrefix, 0) != 0 ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return 0;
  }
  const std::string digits =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::strtoull(digits.c_str(), nullptr, 10);
}

}  // namespace

struct EmbeddedMetaStore::Watcher {
  uint64_t id = 0;
  std::string prefix;
  WatchCallback callback;
  int64_t next_revision = 0;  // first revision not yet delivered
  bool done = false;          // ended with an error, or cancelled
  bool delivering = false;    // the dispatcher is inside callback
};

class EmbeddedMetaStore::Handle final : public WatchHandle {
 public:
  Handle(EmbeddedMetaStore* store, std::shared_ptr<Watcher> w) : store_(store), w_(std::move(w)) {}
  ~Handle() override { store_->CancelWatch(w_); }

 private:
  EmbeddedMetaStore* const store_;
  const std::shared_ptr<Watcher> w_;
};

EmbeddedMetaStore::EmbeddedMetaStore(std::string dir, Options options)
    : dir_(std::move(dir)),
      options_(options),
      fs_(options.fs != nullptr ? options.fs : fs::DefaultFileSystem()),
      state_(options.history_limit) {}

absl::StatusOr<std::unique_ptr<EmbeddedMetaStore>> EmbeddedMetaStore::Open(const std::string& dir,
                                                                           Options options) {
  std::unique_ptr<EmbeddedMetaStore> store(new EmbeddedMetaStore(dir, options));
  RETURN_IF_ERROR(store->Recover());
  store->dispatcher_ = std::jthread([s = store.get()] { s->DispatchLoop(); });
  store->dispatcher_id_ = store->dispatcher_.get_id();
  store->expirer_ = std::jthread([s = store.get()] { s->ExpiryLoop(); });
  return store;
}

EmbeddedMetaStore::~EmbeddedMetaStore() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  if (dispatcher_.joinable()) dispatcher_.join();
  if (expirer_.joinable()) expirer_.join();
  absl::MutexLock w(&write_mu_);
  if (log_ != nullptr) log_->Close().IgnoreError();  // every record was synced already
}

absl::Status EmbeddedMetaStore::Recover() {
  absl::MutexLock w(&write_mu_);
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(fs_->CreateDirs(dir_));
  uint64_t log_seq = 1;
  const std::string snapshot_path = fs::JoinPath(dir_, kSnapshotFileName);
  ASSIGN_OR_RETURN(bool have_snapshot, fs_->FileExists(snapshot_path));
  if (have_snapshot) {
    ASSIGN_OR_RETURN(std::string bytes, fs::ReadFileToString(fs_, snapshot_path));
    ASSIGN_OR_RETURN(Snapshot snap, DecodeSnapshot(bytes));
    log_seq = snap.log_seq;
    state_.Restore(snap.revision, snap.next_lease_id, std::move(snap.leases), std::move(snap.kvs));
  }
  // Logs older than the snapshot's are leftovers of a compaction that crashed before removing
  // them; a newer one cannot exist (the new log is created after the snapshot is durable).
  ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->GetChildren(dir_));
  bool have_log = false;
  for (const std::string& name : names) {
    const uint64_t seq = LogSeqOf(name);
    if (seq == 0) continue;
    if (seq < log_seq) {
      RETURN_IF_ERROR(fs_->RemoveFile(fs::JoinPath(dir_, name)));
    } else if (seq > log_seq) {
      return absl::DataLossError(
          absl::StrCat("metadata store: log ", name, " is newer than the snapshot"));
    } else {
      have_log = true;
    }
  }
  const std::string log_path = fs::JoinPath(dir_, LogFileName(log_seq));
  if (have_log) {
    ASSIGN_OR_RETURN(std::string bytes, fs::ReadFileToString(fs_, log_path));
    ASSIGN_OR_RETURN(ParsedLog parsed, ParseMetaLog(bytes));
    if (parsed.valid_bytes < kLogHeaderSize) {
      // The crash hit while the header was written: nothing was ever logged there.
      RETURN_IF_ERROR(fs_->RemoveFile(log_path));
      have_log = false;
    } else {
      if (parsed.seq != log_seq) return absl::DataLossError("metadata store: log seq mismatch");
      for (const Mutation& m : parsed.mutations) RETURN_IF_ERROR(state_.Apply(m));
      ASSIGN_OR_RETURN(log_, MetaLogWriter::Reopen(fs_, log_path, log_seq, parsed.valid_bytes));
    }
  }
  if (!have_log) {
    ASSIGN_OR_RETURN(log_, MetaLogWriter::Create(fs_, dir_, log_seq));
  }
  const absl::Time now = absl::Now();
  for (const auto& [id, lease] : state_.leases()) {
    lease_expiry_[id] = now + absl::Milliseconds(lease.ttl_ms);
  }
  return absl::OkStatus();
}

bool EmbeddedMetaStore::LockWriter(absl::Time deadline) {
  if (!write_mu_.LockWhenWithDeadline(absl::Condition::kTrue, deadline)) {
    write_mu_.Unlock();
    return false;
  }
  return true;
}

absl::Status EmbeddedMetaStore::Commit(const Mutation& m) {
  RETURN_IF_ERROR(write_error_);
  if (absl::Status s = log_->AppendSync(m); !s.ok()) {
    write_error_ = s;
    return s;
  }
  {
    absl::MutexLock l(&mu_);
    if (absl::Status s = state_.Apply(m); !s.ok()) {
      // The log now holds a mutation the state rejected: a bug, never continue past it.
      write_error_ = absl::InternalError(absl::StrCat("metadata store: ", s.message()));
      return write_error_;
    }
    if (m.kind == Mutation::Kind::kLeaseGrant) {
      lease_expiry_[m.lease] = absl::Now() + absl::Milliseconds(m.ttl_ms);
      expiry_changed_ = true;
    } else if (m.kind == Mutation::Kind::kLeaseRevoke) {
      lease_expiry_.erase(m.lease);
    }
  }
  if (log_->size() >= options_.snapshot_threshold_bytes) {
    if (absl::Status s = SnapshotLocked(); !s.ok()) {
      // After the snapshot's rename the old log must not grow: stop writing altogether.
      write_error_ = s;
    }
  }
  return absl::OkStatus();  // the mutation itself is durable either way
}

absl::Status EmbeddedMetaStore::SnapshotLocked() {
  Snapshot snap;
  snap.log_seq = log_->seq() + 1;
  {
    absl::ReaderMutexLock l(&mu_);
    snap.revision = state_.revision();
    snap.next_lease_id = state_.next_lease_id();
    for (const auto& [id, lease] : state_.leases()) snap.leases[id].ttl_ms = lease.ttl_ms;
    snap.kvs.reserve(state_.kvs().size());
    for (const auto& [key, kv] : state_.kvs()) snap.kvs.push_back(kv);
  }
  RETURN_IF_ERROR(
      fs::WriteFileAtomically(fs_, fs::JoinPath(dir_, kSnapshotFileName), EncodeSnapshot(snap)));
  const std::string old_log = fs::JoinPath(dir_, LogFileName(log_->seq()));
  ASSIGN_OR_RETURN(auto next, MetaLogWriter::Create(fs_, dir_, snap.log_seq));
  log_->Close().IgnoreError();  // fully synced; it is about to be removed
  log_ = std::move(next);
  // A crash before this removal leaves the old log behind; Recover removes it.
  return fs_->RemoveFile(old_log);
}

absl::StatusOr<GetResult> EmbeddedMetaStore::Get(std::string_view key, absl::Time deadline) {
  RETURN_IF_ERROR(CheckKey(key));
  RETURN_IF_ERROR(CheckDeadline(deadline));
  absl::ReaderMutexLock l(&mu_);
  const KeyValue* kv = state_.Find(key);
  if (kv == nullptr) return absl::NotFoundError(absl::StrCat("key '", ToAbsl(key), "' not found"));
  return GetResult{.kv = *kv, .revision = state_.revision()};
}

absl::StatusOr<RangeResult> EmbeddedMetaStore::Range(std::string_view prefix, absl::Time deadline,
                                                     int64_t limit) {
  if (limit < 0) return absl::InvalidArgumentError("metadata store: negative limit");
  RETURN_IF_ERROR(CheckDeadline(deadline));
  absl::ReaderMutexLock l(&mu_);
  RangeResult r;
  r.kvs = state_.RangePrefix(prefix, limit, &r.more);
  r.revision = state_.revision();
  return r;
}

absl::StatusOr<int64_t> EmbeddedMetaStore::Put(std::string_view key, std::string_view value,
                                               absl::Time deadline, LeaseId lease) {
  ASSIGN_OR_RETURN(TxnResult r,
                   Txn({}, {Op::Put(std::string(key), std::string(value), lease)}, {}, deadline));
  return r.revision;
}

absl::StatusOr<DeleteResult> EmbeddedMetaStore::Delete(std::string_view key, absl::Time deadline) {
  RETURN_IF_ERROR(CheckKey(key));
  ASSIGN_OR_RETURN(TxnResult r, Txn({}, {Op::Delete(std::string(key))}, {}, deadline));
  return DeleteResult{.deleted = r.results[0].deleted, .revision = r.revision};
}

absl::StatusOr<DeleteResult> EmbeddedMetaStore::DeletePrefix(std::string_view prefix,
                                                             absl::Time deadline) {
  ASSIGN_OR_RETURN(TxnResult r, Txn({}, {Op::DeletePrefix(std::string(prefix))}, {}, deadline));
  return DeleteResult{.deleted = r.results[0].deleted, .revision = r.revision};
}

absl::StatusOr<TxnResult> EmbeddedMetaStore::Txn(const std::vector<Compare>& compares,
                                                 const std::vector<Op>& then_ops,
                                                 const std::vector<Op>& else_ops,
                                                 absl::Time deadline) {
  RETURN_IF_ERROR(CheckDeadline(deadline));
  if (!LockWriter(deadline)) return WriterDeadlineError();
  WriterUnlock unlock(&write_mu_);
  KvState::TxnPlan plan;
  {
    absl::ReaderMutexLock l(&mu_);
    ASSIGN_OR_RETURN(plan, state_.PlanTxn(compares, then_ops, else_ops));
  }
  TxnResult result{.succeeded = plan.succeeded, .results = std::move(plan.results)};
  if (!plan.mutation.writes.empty()) {
    RETURN_IF_ERROR(Commit(plan.mutation));
    result.revision = plan.mutation.revision;
  } else {
    RETURN_IF_ERROR(write_error_);  // a failed store answers no txn, not even a read-only one
    absl::ReaderMutexLock l(&mu_);
    result.revision = state_.revision();
  }
  return result;
}

absl::StatusOr<LeaseGrant> EmbeddedMetaStore::GrantLease(absl::Duration ttl, absl::Time deadline) {
  const int64_t ttl_ms = absl::ToInt64Milliseconds(absl::Ceil(ttl, absl::Milliseconds(1)));
  if (ttl_ms <= 0) return absl::InvalidArgumentError("metadata store: lease ttl must be > 0");
  RETURN_IF_ERROR(CheckDeadline(deadline));
  if (!LockWriter(deadline)) return WriterDeadlineError();
  WriterUnlock unlock(&write_mu_);
  Mutation m;
  {
    absl::ReaderMutexLock l(&mu_);
    m = state_.PlanGrant(ttl_ms);
  }
  RETURN_IF_ERROR(Commit(m));
  return LeaseGrant{.id = m.lease, .ttl = absl::Milliseconds(ttl_ms)};
}

absl::StatusOr<absl::Duration> EmbeddedMetaStore::KeepAliveOnce(LeaseId lease,
                                                                absl::Time deadline) {
  RETURN_IF_ERROR(CheckDeadline(deadline));
  absl::MutexLock l(&mu_);
  const absl::Time now = absl::Now();
  auto it = lease_expiry_.find(lease);
  // An expired lease the expiry thread has not revoked yet is already gone for the caller.
  if (it == lease_expiry_.end() || it->second <= now) {
    return absl::NotFoundError(absl::StrCat("lease ", lease, " not found or expired"));
  }
  const absl::Duration ttl = absl::Milliseconds(state_.leases().at(lease).ttl_ms);
  it->second = now + ttl;
  expiry_changed_ = true;
  return ttl;
}

absl::Status EmbeddedMetaStore::RevokeLease(LeaseId lease, absl::Time deadline) {
  RETURN_IF_ERROR(CheckDeadline(deadline));
  if (!LockWriter(deadline)) return WriterDeadlineError();
  WriterUnlock unlock(&write_mu_);
  Mutation m;
  {
    absl::ReaderMutexLock l(&mu_);
    ASSIGN_OR_RETURN(m, state_.PlanRevoke(lease));
  }
  return Commit(m);
}

absl::StatusOr<std::unique_ptr<WatchHandle>> EmbeddedMetaStore::Watch(std::string_view prefix,
                                                                      int64_t start_revision,
                                                                      WatchCallback callback,
                                                                      absl::Time deadline) {
  if (start_revision < 0) return absl::InvalidArgumentError("metadata store: negative revision");
  RETURN_IF_ERROR(CheckDeadline(deadline));
  auto w = std::make_shared<Watcher>();
  w->prefix = std::string(prefix);
  w->callback = std::move(callback);
  absl::MutexLock l(&mu_);
  w->id = next_watcher_id_++;
  w->next_revision = start_revision == 0 ? state_.revision() + 1 : start_revision;
  watchers_[w->id] = w;
  return std::unique_ptr<WatchHandle>(new Handle(this, std::move(w)));
}

void EmbeddedMetaStore::CancelWatch(const std::shared_ptr<Watcher>& w) {
  absl::MutexLock l(&mu_);
  w->done = true;
  watchers_.erase(w->id);
  // From inside its own callback the dispatcher is this thread: nothing to wait for.
  if (std::this_thread::get_id() != dispatcher_id_) {
    mu_.Await(absl::Condition(
        +[](Watcher* watcher) { return !watcher->delivering; }, w.get()));
  }
}

absl::Status EmbeddedMetaStore::Compact(int64_t revision, absl::Time deadline) {
  RETURN_IF_ERROR(CheckDeadline(deadline));
  absl::MutexLock l(&mu_);
  if (revision > state_.revision()) {
    return absl::OutOfRangeError("metadata store: compaction revision is in the future");
  }
  if (revision <= state_.compacted()) {
    return absl::OutOfRangeError("metadata store: revision already compacted");
  }
  state_.Compact(revision);
  return absl::OkStatus();
}

bool EmbeddedMetaStore::DispatchReady() const {
  if (stopping_) return true;
  for (const auto& [id, w] : watchers_) {
    if (!w->done && w->next_revision <= state_.revision()) return true;
  }
  return false;
}

void EmbeddedMetaStore::DispatchLoop() {
  uint64_t last_id = 0;  // round-robin, so one busy watch cannot starve the others
  while (true) {
    std::shared_ptr<Watcher> w;
    WatchResponse response;
    {
      absl::MutexLock l(&mu_);
      mu_.Await(absl::Condition(this, &EmbeddedMetaStore::DispatchReady));
      if (stopping_) return;
      auto ready = [&](const auto& entry) ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return !entry.second->done && entry.second->next_revision <= state_.revision();
      };
      auto it = std::find_if(watchers_.upper_bound(last_id), watchers_.end(), ready);
      if (it == watchers_.end()) it = std::find_if(watchers_.begin(), watchers_.end(), ready);
      w = it->second;
      last_id = w->id;
      if (w->next_revision <= state_.compacted()) {
        response.status = absl::OutOfRangeError(absl::StrCat(
            "metadata store: watch start revision ", w->next_revision, " is compacted"));
        response.compact_revision = state_.compacted();
        w->done = true;
      } else {
        int64_t next = 0;
        response.events = state_.EventsFrom(w->next_revision, w->prefix, kMaxBatchEvents, &next);
        w->next_revision = next;
        if (response.events.empty()) continue;  // nothing under this prefix
      }
      w->delivering = true;
    }
    w->callback(response);
    absl::MutexLock l(&mu_);
    w->delivering = false;
  }
}

void EmbeddedMetaStore::ExpiryLoop() {
  while (true) {
    std::vector<LeaseId> expired;
    {
      absl::MutexLock l(&mu_);
      absl::Time next = absl::InfiniteFuture();
      for (const auto& [id, at] : lease_expiry_) next = std::min(next, at);
      expiry_changed_ = false;
      auto woken = [this]()
                       ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_ || expiry_changed_; };
      mu_.AwaitWithDeadline(absl::Condition(&woken), next);
      if (stopping_) return;
      const absl::Time now = absl::Now();
      for (const auto& [id, at] : lease_expiry_) {
        if (at <= now) expired.push_back(id);
      }
    }
    for (LeaseId id : expired) {
      absl::MutexLock w(&write_mu_);
      Mutation m;
      {
        absl::ReaderMutexLock l(&mu_);
        // A keepalive may have come in since; a revoke may have removed it.
        auto it = lease_expiry_.find(id);
        if (it == lease_expiry_.end() || it->second > absl::Now()) continue;
        auto plan = state_.PlanRevoke(id);
        if (!plan.ok()) continue;
        m = *std::move(plan);
      }
      if (!Commit(m).ok()) return;  // the store failed (sticky): nothing more can be revoked
    }
  }
}

}  // namespace kf::meta
