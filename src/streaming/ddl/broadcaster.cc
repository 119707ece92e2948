#include "streaming/ddl/broadcaster.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/backoff.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "message/message_trace.h"
#include "message/validate.h"
#include "spdlog/spdlog.h"
#include "streaming/ddl/broadcast_task.h"

namespace kf::streaming::ddl {
namespace {

using kingfisher::v1::BroadcastTask;

// Deletes per tombstone-trimming transaction (etcd allows 128 operations by default).
constexpr size_t kTrimBatch = 50;

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }
std::string Str(const absl::Status& s) { return s.ToString(); }
// FencedStore's verdict for a write refused because `coord` is no longer ours.
bool Deposed(const absl::Status& s) { return absl::IsFailedPrecondition(s); }

absl::Status Invalid(const absl::AlphaNum& a, const absl::AlphaNum& b = "") {
  return StreamingError(StreamingCode::kInvalidArgument, absl::StrCat("broadcast: ", a, b));
}

// A DropCollection refused with COLLECTION_NOT_FOUND: the vchannel had dropped the collection
// already and appends nothing after that (docs/ddl-node.md), so retrying could never succeed
// and there is nothing left to do there.
bool AlreadyDropped(MessageType type, const absl::Status& s) {
  return type == MessageType::kDropCollection &&
         GetStreamingCode(s) == StreamingCode::kCollectionNotFound;
}

}  // namespace

struct Broadcaster::Task {
  Task(const Options& o) : backoff(o.retry_backoff, o.retry_backoff_max) {}

  uint64_t id = 0;
  std::string key;
  BroadcastTask record;      // as last written (or read)
  int64_t mod_revision = 0;  // of `record` in the store
  MutableMessage message;    // record.message(), decoded
  ResourceKeyLocks::Guard locks;
  AckWrites with_task;  // new tasks: written in the task's transaction
  bool is_new = false;
  std::shared_ptr<trace::Span> span;  // `wal.broadcast` of a new task; null when recovered
  Backoff backoff;
  // Guarded by Broadcaster::mu_.
  bool finished = false;
  absl::Status status;
};

Broadcaster::Broadcaster(meta::MetaStore* store, const ClusterKeys& keys,
                         int64_t coord_create_revision, BroadcastAppender* appender,
                         Options options)
    : store_(store, keys.coord(), coord_create_revision),
      keys_(keys),
      ids_(&store_, keys.broadcast_next_id(), options.id_block_size),
      appender_(appender),
      options_(std::move(options)) {}

Broadcaster::~Broadcaster() { Stop(); }

void Broadcaster::RegisterCallback(MessageType type, AckCallback callback) {
  absl::MutexLock l(&mu_);
  callbacks_[type] = std::move(callback);
}

AckCallback Broadcaster::CallbackFor(MessageType type) const {
  absl::MutexLock l(&mu_);
  auto it = callbacks_.find(type);
  return it == callbacks_.end() ? AckCallback() : it->second;
}

absl::Status Broadcaster::Recover(absl::Time deadline) {
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return absl::UnavailableError("broadcaster stopped");
    if (recovered_) return absl::FailedPreconditionError("broadcaster already recovered");
  }
  ASSIGN_OR_RETURN(meta::RangeResult range,
                   store_.store()->Range(keys_.broadcast_tasks_prefix(), deadline));
  std::vector<std::shared_ptr<Task>> resumed;
  std::map<uint64_t, Tombstone> tombstones;
  for (const meta::KeyValue& kv : range.kvs) {
    ASSIGN_OR_RETURN(BroadcastTask record, ParseBroadcastTask(keys_, kv.key, kv.value));
    if (record.state() == kingfisher::v1::BROADCAST_DONE) {
      tombstones[record.broadcast_id()] = {kv.key, kv.mod_revision, record.done_time_ms()};
      continue;
    }
    auto task = std::make_shared<Task>(options_);
    ASSIGN_OR_RETURN(task->message, TaskMessage(record));
    std::vector<ResourceKey> resources;
    const kingfisher::v1::BroadcastHeader header = *task->message.broadcast_header();
    for (const auto& p : header.resource_keys()) {
      absl::StatusOr<ResourceKey> k = ResourceKey::FromProto(p);
      if (!k.ok()) return absl::DataLossError(absl::StrCat(kv.key, ": ", k.status().message()));
      resources.push_back(*std::move(k));
    }
    // Unfinished tasks never share a key (a task holds its keys until DONE), so this cannot
    // wait; a conflict means the store holds something no broadcaster wrote.
    absl::StatusOr<ResourceKeyLocks::Guard> locks =
        locks_.Acquire(std::move(resources), /*blocking=*/false, deadline);
    if (!locks.ok()) {
      return absl::InternalError(absl::StrCat("recovering broadcast ", record.broadcast_id(), ": ",
                                              locks.status().message()));
    }
    task->id = record.broadcast_id();
    task->key = kv.key;
    task->record = std::move(record);
    task->mod_revision = kv.mod_revision;
    task->locks = *std::move(locks);
    resumed.push_back(std::move(task));
  }
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return absl::UnavailableError("broadcaster stopped");
    for (auto& task : resumed) {
      spdlog::info("broadcaster: resuming broadcast {} ({} of {} vchannels acked)", task->id,
                   task->record.acks_size(), task->record.vchannels_size());
      Start(task);
    }
    recovered_ = true;
    tombstones_ = std::move(tombstones);
  }
  TrimTombstones();
  return absl::OkStatus();
}

absl::StatusOr<ResourceKeyLocks::Guard> Broadcaster::Lock(std::vector<ResourceKey> keys,
                                                          bool blocking, absl::Time deadline) {
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return absl::UnavailableError("broadcaster stopped");
    if (!recovered_) return absl::UnavailableError("broadcaster is recovering");
  }
  return locks_.Acquire(std::move(keys), blocking, deadline);
}

absl::Status Broadcaster::CheckRequest(const ResourceKeyLocks::Guard& locks,
                                       const Request& r) const {
  if (!locks.held()) return Invalid("no resource keys are held");
  if (!IsExclusiveType(r.message.type())) {
    return Invalid("only DDL types are broadcast, not ", ToAbsl(MessageTypeName(r.message.type())));
  }
  for (std::string_view key : {prop::kVChannel, prop::kIdempotencyKey, prop::kBroadcast}) {
    if (r.message.HasProperty(key)) return Invalid("the broadcaster sets ", ToAbsl(key));
  }
  if (r.vchannels.empty()) return Invalid("no target vchannels");
  std::set<std::string_view> seen;
  for (const std::string& v : r.vchannels) {
    if (!seen.insert(v).second) return Invalid("duplicate vchannel ", v);
    RETURN_IF_ERROR(PChannelOfVChannel(v).status());
  }
  return absl::OkStatus();
}

absl::StatusOr<Broadcaster::Result> Broadcaster::Broadcast(ResourceKeyLocks::Guard locks,
                                                           Request request, absl::Time deadline) {
  RETURN_IF_ERROR(CheckRequest(locks, request));
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return absl::UnavailableError("broadcaster stopped");
  }
  absl::StatusOr<uint64_t> id = ids_.Next(std::min(deadline, absl::Now() + options_.call_timeout));
  if (!id.ok()) {
    if (Deposed(id.status())) return absl::UnavailableError(id.status().message());
    return id.status();
  }

  auto task = std::make_shared<Task>(options_);
  task->id = *id;
  task->key = keys_.broadcast_task(*id);
  kingfisher::v1::BroadcastHeader header;
  header.set_broadcast_id(*id);
  for (const std::string& v : request.vchannels) header.add_vchannels(v);
  for (const ResourceKey& k : locks.keys()) *header.add_resource_keys() = k.ToProto();
  request.message.set_broadcast_header(header);

  // Parent: the caller's request, else the trace the caller put into `_tc`.
  const trace::Context parent = request.ctx.span_context().IsValid()
                                    ? request.ctx
                                    : ExtractTraceContext(request.ctx, request.message);
  auto [ctx, span] =
      StartSpanForMessage(parent, &request.message, "wal.broadcast", trace::SpanKind::kProducer);
  InjectTraceContext(ctx, &request.message);  // keeps a caller's `_tc`

  task->record.set_broadcast_id(*id);
  task->record.set_message(request.message.Encode());
  for (const std::string& v : request.vchannels) task->record.add_vchannels(v);
  task->record.set_state(kingfisher::v1::BROADCAST_PENDING);
  task->record.set_create_time_ms(NowMs());
  task->message = std::move(request.message);
  task->with_task = std::move(request.with_task);
  task->locks = std::move(locks);
  task->is_new = true;
  task->span = std::move(span);

  absl::MutexLock l(&mu_);
  if (stopping_) {
    task->span->End();
    return absl::UnavailableError("broadcaster stopped");
  }
  Start(task);
  auto finished = [&task]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return task->finished; };
  if (!mu_.AwaitWithDeadline(absl::Condition(&finished), deadline)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "broadcast ", task->id, " is still in progress; it completes in the background"));
  }
  if (!task->status.ok()) return task->status;
  Result result;
  result.broadcast_id = task->id;
  for (const std::string& v : task->record.vchannels()) {
    if (const auto* ack = FindAck(task->record, v)) result.acks.push_back(*ack);
  }
  return result;
}

void Broadcaster::Start(std::shared_ptr<Task> task) {
  for (uint64_t id : finished_) {
    auto it = workers_.find(id);
    if (it == workers_.end()) continue;
    it->second.join();  // it has left Run: it needs mu_ no more
    workers_.erase(it);
  }
  finished_.clear();
  const uint64_t id = task->id;
  running_[id] = task;
  workers_.emplace(id, std::jthread([this, task = std::move(task)](std::stop_token stop) {
                     Run(std::move(stop), task);
                   }));
}

void Broadcaster::Run(std::stop_token stop, const std::shared_ptr<Task>& task) {
  absl::Status s = Drive(stop, *task);
  if (task->span != nullptr) {
    task->span->RecordError(s);
    task->span->End();
  }
  if (s.ok()) {
    spdlog::info("broadcaster: broadcast {} ({}) done on {} vchannels", task->id,
                 MessageTypeName(task->message.type()), task->record.vchannels_size());
  } else {
    spdlog::warn("broadcaster: broadcast {} stopped: {}", task->id, Str(s));
  }
  // Before `finished`: a caller that saw its DDL complete may lock the same keys at once.
  task->locks.Release();
  if (s.ok()) {
    {
      absl::MutexLock l(&mu_);
      tombstones_[task->id] = {task->key, task->mod_revision, task->record.done_time_ms()};
    }
    TrimTombstones();
  }
  absl::MutexLock l(&mu_);
  task->finished = true;
  task->status = Deposed(s) ? absl::UnavailableError(s.message()) : s;
  running_.erase(task->id);
  finished_.push_back(task->id);
}

absl::Status Broadcaster::Drive(std::stop_token stop, Task& task) {
  if (task.is_new) RETURN_IF_ERROR(Persist(stop, task));
  while (task.record.state() == kingfisher::v1::BROADCAST_PENDING) {
    RETURN_IF_ERROR(AppendRound(stop, task));
  }
  if (task.span != nullptr) task.span->End();  // the fan-out is over
  if (task.record.state() == kingfisher::v1::BROADCAST_ACKED) RETURN_IF_ERROR(Complete(stop, task));
  return absl::OkStatus();
}

absl::Status Broadcaster::Persist(std::stop_token stop, Task& task) {
  const std::string value = task.record.SerializeAsString();
  bool maybe_written = false;
  while (true) {
    std::vector<meta::Compare> compares = {meta::Compare::Absent(task.key)};
    compares.insert(compares.end(), task.with_task.compares.begin(), task.with_task.compares.end());
    std::vector<meta::Op> ops = {meta::Op::Put(task.key, value)};
    ops.insert(ops.end(), task.with_task.ops.begin(), task.with_task.ops.end());
    absl::StatusOr<meta::TxnResult> txn =
        store_.Txn(std::move(compares), std::move(ops), {meta::Op::Get(task.key)},
                   absl::Now() + options_.call_timeout);
    if (txn.ok() && txn->succeeded) {
      task.mod_revision = txn->revision;
      return absl::OkStatus();
    }
    if (txn.ok()) {
      const std::vector<meta::KeyValue>& found = txn->results.at(0).kvs;
      if (!found.empty() && found[0].value == value) {  // an attempt of unknown outcome landed
        task.mod_revision = found[0].mod_revision;
        return absl::OkStatus();
      }
      return absl::AbortedError(absl::StrCat(
          "broadcast ", task.id, ": the state it was based on changed; nothing was written"));
    }
    if (Deposed(txn.status())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "coordinator deposed before broadcast ", task.id, " was persisted; ",
          maybe_written ? "an earlier attempt may have persisted it (the next coordinator "
                          "completes it)"
                        : "nothing was written"));
    }
    if (!IsAmbiguous(txn.status())) return txn.status();
    // Unknown outcome: retry the same transaction until it tells (Absent(task) makes that
    // safe), holding the locks meanwhile.
    maybe_written = true;
    spdlog::warn("broadcaster: persisting broadcast {} failed ({}); retrying", task.id,
                 Str(txn.status()));
    RETURN_IF_ERROR(Pause(stop, task.backoff.Next(), task.id));
  }
}

namespace {
// The results of one round of appends, shared with the appender's callbacks (which may run
// after the worker gave up on the round).
struct Round {
  absl::Mutex mu;
  size_t pending ABSL_GUARDED_BY(mu) = 0;
  bool stopped ABSL_GUARDED_BY(mu) = false;
  std::vector<absl::StatusOr<BroadcastAppendResult>> results ABSL_GUARDED_BY(mu);
};
}  // namespace

absl::Status Broadcaster::AppendRound(std::stop_token stop, Task& task) {
  std::vector<int> todo;
  for (int i = 0; i < task.record.vchannels_size(); ++i) {
    if (FindAck(task.record, task.record.vchannels(i)) == nullptr) todo.push_back(i);
  }
  auto round = std::make_shared<Round>();
  {
    absl::MutexLock l(&round->mu);
    round->pending = todo.size();
    round->results.assign(todo.size(), absl::UnknownError("not appended"));
  }
  // The original trace, for a new task and for a recovered one alike.
  const trace::Context ctx = ExtractTraceContext(trace::Context(), task.message);
  const absl::Time deadline = absl::Now() + options_.append_timeout;
  for (size_t j = 0; j < todo.size(); ++j) {
    appender_->AppendAsync(ctx, VChannelCopy(task.message, task.record, todo[j]), deadline,
                           [round, j](absl::StatusOr<BroadcastAppendResult> r) {
                             absl::MutexLock l(&round->mu);
                             round->results[j] = std::move(r);
                             --round->pending;
                           });
  }
  std::vector<absl::StatusOr<BroadcastAppendResult>> results;
  {
    std::stop_callback on_stop(stop, [&round] {
      absl::MutexLock l(&round->mu);
      round->stopped = true;
    });
    absl::MutexLock l(&round->mu);
    auto over = [&round]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(round->mu) {
      return round->pending == 0 || round->stopped;
    };
    round->mu.Await(absl::Condition(&over));
    if (round->pending > 0) {
      return absl::UnavailableError(
          absl::StrCat("broadcaster stopped; broadcast ", task.id, " resumes on recovery"));
    }
    results = round->results;
  }

  BroadcastTask updated = task.record;
  bool failed = false;
  for (size_t j = 0; j < todo.size(); ++j) {
    const std::string& vchannel = task.record.vchannels(todo[j]);
    if (results[j].ok()) {
      *updated.add_acks() = ToAck(vchannel, *results[j]);
    } else if (AlreadyDropped(task.message.type(), results[j].status())) {
      *updated.add_acks() = AlreadyDroppedAck(vchannel);
      spdlog::info("broadcaster: broadcast {}: {} had dropped the collection already ({}); done",
                   task.id, vchannel, Str(results[j].status()));
    } else {
      failed = true;
      spdlog::warn("broadcaster: broadcast {} to {} failed ({}); retrying", task.id, vchannel,
                   Str(results[j].status()));
    }
  }
  if (updated.acks_size() == updated.vchannels_size()) {
    // Complete writes the acks with DONE: saving them first would only cost a transaction
    // (acks lost in a crash cost deduplicated re-appends, nothing else).
    updated.set_state(kingfisher::v1::BROADCAST_ACKED);
    task.record = std::move(updated);
    task.backoff.Reset();
    return absl::OkStatus();
  }
  if (updated.acks_size() > task.record.acks_size()) {
    absl::Status saved = SaveAcks(task, std::move(updated));
    if (Deposed(saved) || absl::IsDataLoss(saved)) return saved;
    failed = failed || !saved.ok();
  }
  if (!failed) {
    task.backoff.Reset();
    return absl::OkStatus();
  }
  return Pause(stop, task.backoff.Next(), task.id);
}

absl::Status Broadcaster::Rewrite(Task& task, BroadcastTask updated, AckWrites extra) {
  extra.compares.insert(extra.compares.begin(),
                        meta::Compare::ModRevisionIs(task.key, task.mod_revision));
  extra.ops.insert(extra.ops.begin(), meta::Op::Put(task.key, updated.SerializeAsString()));
  absl::StatusOr<meta::TxnResult> txn = store_.Txn(std::move(extra.compares), std::move(extra.ops),
                                                   {}, absl::Now() + options_.call_timeout);
  if (!txn.ok()) return txn.status();
  if (!txn->succeeded) return absl::AbortedError("a compare failed");
  task.record = std::move(updated);
  task.mod_revision = txn->revision;
  return absl::OkStatus();
}

absl::Status Broadcaster::SaveAcks(Task& task, BroadcastTask updated) {
  absl::Status s = Rewrite(task, std::move(updated), {});
  if (s.ok() || Deposed(s)) return s;
  // Unknown outcome, or an earlier such write landed: continue from what the store has. Acks
  // lost here cost a re-append, which the node answers from its dedupe table.
  spdlog::warn("broadcaster: saving the acks of broadcast {} failed ({}); re-reading it", task.id,
               Str(s));
  RETURN_IF_ERROR(Reload(task));
  return absl::UnavailableError("acks not saved");
}

absl::Status Broadcaster::Complete(std::stop_token stop, Task& task) {
  const AckCallback callback = CallbackFor(task.message.type());
  while (true) {
    auto [ctx, span] =
        StartSpan(ExtractTraceContext(trace::Context(), task.message), "wal.bc_callback");
    absl::Status s = [&, &ctx = ctx]() -> absl::Status {
      AckWrites writes;
      if (callback) {
        ASSIGN_OR_RETURN(writes,
                         callback(AckCallbackContext{ctx, stop, task.message, task.record}));
      }
      const BroadcastTask acked = task.record;  // its acks may exist only here
      BroadcastTask done = acked;
      done.set_state(kingfisher::v1::BROADCAST_DONE);
      done.set_done_time_ms(NowMs());
      absl::Status written = Rewrite(task, std::move(done), std::move(writes));
      if (written.ok() || Deposed(written)) return written;
      RETURN_IF_ERROR(Reload(task));
      // An attempt of unknown outcome committed: its writes are in, do not run them again.
      if (task.record.state() == kingfisher::v1::BROADCAST_DONE) return absl::OkStatus();
      task.record = acked;  // at the reloaded mod_revision
      return written;
    }();
    span->RecordError(s);
    span->End();
    if (s.ok() || Deposed(s) || absl::IsDataLoss(s)) return s;
    spdlog::warn("broadcaster: the callback of broadcast {} failed ({}); retrying", task.id,
                 Str(s));
    RETURN_IF_ERROR(Pause(stop, task.backoff.Next(), task.id));
  }
}

absl::Status Broadcaster::Reload(Task& task) {
  absl::StatusOr<meta::GetResult> got =
      store_.store()->Get(task.key, absl::Now() + options_.call_timeout);
  if (absl::IsNotFound(got.status())) {
    return absl::DataLossError(absl::StrCat("broadcast task ", task.key, " vanished"));
  }
  if (!got.ok()) return got.status();
  ASSIGN_OR_RETURN(task.record, ParseBroadcastTask(keys_, task.key, got->kv.value));
  task.mod_revision = got->kv.mod_revision;
  return absl::OkStatus();
}

void Broadcaster::TrimTombstones() {
  std::vector<Tombstone> victims;
  {
    absl::MutexLock l(&mu_);
    const size_t keep = tombstones_.size() > options_.tombstone_max_count
                            ? options_.tombstone_max_count - options_.tombstone_max_count / 8
                            : tombstones_.size();
    const int64_t cutoff_ms = NowMs() - absl::ToInt64Milliseconds(options_.tombstone_max_age);
    for (auto it = tombstones_.begin(); it != tombstones_.end();) {  // oldest id first
      if (tombstones_.size() <= keep && it->second.done_time_ms > cutoff_ms) {
        ++it;
        continue;
      }
      victims.push_back(std::move(it->second));
      it = tombstones_.erase(it);
    }
  }
  // A delete that fails leaves its tombstones in the store until the next Recover lists them.
  for (size_t i = 0; i < victims.size(); i += kTrimBatch) {
    std::vector<meta::Compare> compares;
    std::vector<meta::Op> deletes;
    for (size_t j = i; j < std::min(victims.size(), i + kTrimBatch); ++j) {
      compares.push_back(meta::Compare::ModRevisionIs(victims[j].key, victims[j].mod_revision));
      deletes.push_back(meta::Op::Delete(victims[j].key));
    }
    absl::StatusOr<meta::TxnResult> txn = store_.Txn(std::move(compares), std::move(deletes), {},
                                                     absl::Now() + options_.call_timeout);
    if (!txn.ok()) spdlog::warn("broadcaster: trimming tombstones failed ({})", Str(txn.status()));
  }
}

absl::Status Broadcaster::Pause(std::stop_token stop, absl::Duration d, uint64_t id) {
  if (SleepUnlessStopped(d, std::move(stop))) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat("broadcaster stopped; broadcast ", id, " resumes on recovery"));
}

bool Broadcaster::WaitIdle(absl::Time deadline) {
  absl::MutexLock l(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_.empty(); };
  return mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
}

void Broadcaster::Stop() {
  std::map<uint64_t, std::jthread> workers;
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    workers.swap(workers_);
    finished_.clear();
  }
  for (auto& [id, w] : workers) w.request_stop();
  workers.clear();  // joins
}

}  // namespace kf::streaming::ddl
