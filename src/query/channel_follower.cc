#include "query/channel_follower.h"

#include <algorithm>
#include <utility>

#include "common/hybrid_time.h"
#include "message/builders.h"
#include "spdlog/spdlog.h"
#include "trace/context.h"
#include "wal/txn/txn_message.h"

namespace kf::query {

absl::StatusOr<std::unique_ptr<ChannelFollower>> ChannelFollower::Start(
    std::shared_ptr<wal::Wal> wal, ShardOptions options, absl::Duration drain_interval,
    const RecoveryStorageOptions* recovery, const std::function<bool()>& cancelled,
    CheckpointPrefetch* prefetch) {
  std::optional<RecoveredChannel> recovered;
  wal::ScanOptions scan{.internal = true};
  if (recovery != nullptr) {
    absl::StatusOr<std::optional<RecoveredChannel>> loaded = absl::UnknownError("no prefetch");
    if (prefetch != nullptr) {
      loaded = prefetch->Take(cancelled);
      if (cancelled != nullptr && cancelled()) return loaded.status();
      if (!loaded.ok()) {
        spdlog::info("{}: loading its checkpoint again ({})", wal->pchannel(),
                     loaded.status().ToString());
      }
    }
    if (!loaded.ok()) loaded = LoadCheckpoint(*recovery, wal->pchannel(), options, cancelled);
    if (!loaded.ok()) return loaded.status();
    recovered = *std::move(loaded);
    if (recovered.has_value() && recovered->replay_from.valid()) {
      scan.policy = wal::DeliverPolicy{.kind = wal::DeliverPolicy::Kind::kStartFrom,
                                       .id = recovered->replay_from};
    }
  }
  absl::StatusOr<std::unique_ptr<wal::Scanner>> scanner = wal->Read(scan);
  if (!scanner.ok()) return scanner.status();
  return std::unique_ptr<ChannelFollower>(new ChannelFollower(std::move(wal), options,
                                                              drain_interval, std::move(*scanner),
                                                              std::move(recovered), recovery));
}

ChannelFollower::ChannelFollower(std::shared_ptr<wal::Wal> wal, ShardOptions options,
                                 absl::Duration drain_interval,
                                 std::unique_ptr<wal::Scanner> scanner,
                                 std::optional<RecoveredChannel> recovered,
                                 const RecoveryStorageOptions* recovery)
    : wal_(std::move(wal)),
      memory_pressure_(options.memory_pressure),
      chunk_rows_(options.chunk_rows),
      applier_(wal_->pchannel(), options,
               [this](const std::shared_ptr<Shard>& shard, const std::string& partition) {
                 RequestSeal(shard, partition);
               }),
      drain_interval_(drain_interval),
      scanner_(std::move(scanner)),
      checkpoint_interval_(recovery != nullptr ? recovery->checkpoint_interval
                                               : absl::InfiniteDuration()),
      wal_retention_(recovery != nullptr ? recovery->wal_retention : absl::InfiniteDuration()),
      wal_retention_bytes_(recovery != nullptr ? recovery->wal_retention_bytes : 0) {
  if (recovery != nullptr) {
    int64_t mod_revision = 0;
    if (recovered.has_value()) {
      mod_revision = recovered->mod_revision;
      checkpoint_stats_.loaded_ts = recovered->checkpoint_ts;
      checkpoint_stats_.loaded_segments = recovered->segments;
      checkpoint_stats_.loaded_replay_from = recovered->replay_from;
      planned_ts_ = recovered->checkpoint_ts;
      spdlog::info(
          "{}: recovered {} shards and {} sealed segments from its checkpoint at "
          "timetick {}; replaying the WAL from {}",
          wal_->pchannel(), recovered->shards.size(), recovered->segments, recovered->checkpoint_ts,
          recovered->replay_from.ToText());
      applier_.Restore(std::move(recovered->shards), recovered->checkpoint_ts, recovered->wal);
    }
    writer_ =
        std::make_unique<CheckpointWriter>(*recovery, wal_->pchannel(), wal_->term(), mod_revision);
    next_checkpoint_ = absl::Now() + checkpoint_interval_;
  }
  thread_ = std::thread([this] { Run(); });
}

ChannelFollower::~ChannelFollower() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
  writer_.reset();  // its last write's callback touches the applier
}

absl::Status ChannelFollower::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

void ChannelFollower::Want(uint64_t ts) const {
  absl::MutexLock lock(&mu_);
  wanted_ = std::max(wanted_, ts);
}

bool ChannelFollower::Chasing() const {
  absl::MutexLock lock(&mu_);
  return !stopping_ && wanted_ > applier_.tsafe();
}

void ChannelFollower::Run() {
  absl::Status stopped;
  for (;;) {
    bool chase = false;
    {
      absl::MutexLock lock(&mu_);
      // Lock order: this mutex, then the applier's (tsafe()); nothing takes them the other way.
      auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || wanted_ > applier_.tsafe();
      };
      mu_.AwaitWithTimeout(absl::Condition(&woken), drain_interval_);
      if (stopping_) break;
      chase = wanted_ > applier_.tsafe();
    }
    stopped = Drain(chase);
    if (!stopped.ok()) break;
    MaybeSealAged();
    MaybeCheckpoint();
  }
  absl::MutexLock lock(&mu_);
  status_ = std::move(stopped);
}

ChannelFollower::CheckpointStats ChannelFollower::checkpoint_stats() const {
  absl::MutexLock lock(&mu_);
  CheckpointStats out = checkpoint_stats_;
  out.applied_messages = applied_messages_.load(std::memory_order_relaxed);
  return out;
}

void ChannelFollower::MaybeCheckpoint() {
  // Planned only while no write is in progress, and submitted by this thread alone: no commit
  // can then land between the plan and its submit. One that did would make the plan take again
  // the deletes that commit logged, and its own commit drop as many later ones unlogged (lost
  // at the next restart; the ASan build's model test caught it under load).
  if (writer_ == nullptr || writer_->busy()) return;
  const bool sealed = applier_.segments_opened() != planned_seals_;
  // A failed write is tried again after the interval even if nothing was applied since.
  const bool due = absl::Now() >= next_checkpoint_ &&
                   (applier_.tsafe() != planned_ts_ || retry_checkpoint_.load());
  if (!sealed && !due) return;
  CheckpointPlan plan = applier_.PlanCheckpoint();
  plan.truncate_before = TruncationPoint(plan.replay_from);
  plan.applied_messages = applied_messages_.load(std::memory_order_relaxed);
  const uint64_t seals = applier_.segments_opened();
  const uint64_t ts = plan.checkpoint_ts;
  // Cleared before the submit: this write's own failure (on the writer's thread) sets it again.
  const bool retry = retry_checkpoint_.exchange(false);
  if (!writer_->Submit(std::move(plan),
                       [this](const CheckpointPlan& p, absl::Status s) { CheckpointDone(p, s); })) {
    if (retry) retry_checkpoint_.store(true);
    return;  // a write is in progress: asked again after the next drain
  }
  planned_seals_ = seals;
  planned_ts_ = ts;
  next_checkpoint_ = absl::Now() + checkpoint_interval_;
}

void ChannelFollower::MaybeSealAged() {
  const absl::Time now = absl::Now();
  if (now < next_age_check_ || !scanner_->tailing()) return;
  next_age_check_ = now + absl::Seconds(1);
  for (const auto& [shard, partition] :
       applier_.ClaimAgedSeals(static_cast<uint64_t>(absl::ToUnixMillis(now)))) {
    RequestSeal(shard, partition);
  }
  // Memory pressure: a flushed segment is served from its object, so sealing the largest
  // growing segment (one of at least a chunk: indexed, not a sliver) frees its memory once it
  // is flushed — one a second per pchannel, from the high-water mark until the low one.
  if (writer_ == nullptr || memory_pressure_ == nullptr) return;
  switch (memory_pressure_()) {
    case MemoryPressure::kHigh:
      sealing_for_memory_ = true;
      break;
    case MemoryPressure::kLow:
      sealing_for_memory_ = false;
      break;
    case MemoryPressure::kEasing:
      break;
  }
  if (!sealing_for_memory_) return;
  if (auto largest = applier_.ClaimLargestSeal(chunk_rows_); largest.has_value()) {
    spdlog::info("{}: sealing the growing segment of {} partition {} to free memory",
                 wal_->pchannel(), largest->first->vchannel(), largest->second);
    RequestSeal(largest->first, largest->second);
  }
}

namespace {

// What `m` occupies in the log, about: a Txn's begin, bodies and commit (its own message is
// only the commit); TimeTicks count nothing (most are never written).
size_t LogBytes(const ImmutableMessage& m) {
  if (m.type() == MessageType::kTimeTick) return 0;
  if (m.type() != MessageType::kTxn) return m.message().EncodedSize();
  size_t n = 0;
  for (const ImmutableMessagePtr& inner : wal::AsTxnMessage(m)->inner()) {
    n += inner->message().EncodedSize();
  }
  return n;
}

}  // namespace

void ChannelFollower::SampleAge(const MessageId& id, uint64_t ts, size_t bytes) {
  const uint64_t before = applied_bytes_;
  applied_bytes_ += bytes;
  if (wal_retention_ <= absl::ZeroDuration()) return;  // checkpoints alone decide
  const bool by_time = wal_retention_ != absl::InfiniteDuration();
  if (!by_time && wal_retention_bytes_ == 0) return;  // never truncated
  const uint64_t ms = PhysicalMs(TimeTick(ts));
  if (ages_.empty() || ms >= ages_.back().ms + 1000 ||
      (wal_retention_bytes_ != 0 &&
       before >= ages_.back().bytes_before + wal_retention_bytes_ / 64)) {
    ages_.push_back({.id = id, .ms = ms, .bytes_before = before});
  }
}

MessageId ChannelFollower::TruncationPoint(const MessageId& replay_from) {
  if (!replay_from.valid()) return MessageId();
  if (wal_retention_ <= absl::ZeroDuration()) return replay_from;  // every message is old enough
  // The log below a sample may go when it is older than the retention time, or when what
  // follows it already exceeds the size bound: the newest sample either policy lets go.
  const bool by_time = wal_retention_ != absl::InfiniteDuration();
  const int64_t horizon_ms = by_time ? absl::ToUnixMillis(absl::Now() - wal_retention_) : 0;
  auto may_go = [&](const Sample& s) {
    return (by_time && static_cast<int64_t>(s.ms) <= horizon_ms) ||
           (wal_retention_bytes_ != 0 && applied_bytes_ - s.bytes_before >= wal_retention_bytes_);
  };
  while (ages_.size() >= 2 && may_go(ages_[1])) ages_.pop_front();
  // Below the first sample (where this follower started reading) ages and sizes are unknown:
  // the log there stays until a sample proves it may go.
  if (ages_.empty() || !may_go(ages_.front())) return MessageId();
  return std::min(replay_from, ages_.front().id);
}

void ChannelFollower::CheckpointDone(const CheckpointPlan& plan, const absl::Status& status) {
  absl::StatusOr<MessageId> truncated = absl::CancelledError("");
  if (status.ok()) {
    for (const auto& [shard, sp] : plan.shards) shard->CheckpointCommitted(sp, plan.replay_from);
    // Only below a committed replay_from: the next open reads from there (and the WAL's state
    // from above it), whatever happens to this node now.
    if (plan.truncate_before.valid()) {
      truncated = wal_->TruncateBefore(plan.truncate_before);
      if (!truncated.ok() && !absl::IsUnimplemented(truncated.status())) {
        spdlog::warn("truncating {} below {}: {}", wal_->pchannel(), plan.truncate_before.ToText(),
                     truncated.status().ToString());
      }
    }
  } else {
    spdlog::warn("checkpoint of {} at timetick {}: {} (tried again in {})", wal_->pchannel(),
                 plan.checkpoint_ts, status.ToString(), absl::FormatDuration(checkpoint_interval_));
  }
  absl::MutexLock lock(&mu_);
  if (status.ok()) {
    checkpoint_stats_.committed_ts = plan.checkpoint_ts;
    checkpoint_stats_.committed_replay_from = plan.replay_from;
    checkpoint_stats_.committed_messages = plan.applied_messages;
    checkpoint_stats_.committed_at = absl::Now();
    ++checkpoint_stats_.commits;
    checkpoint_stats_.last_error = absl::OkStatus();
    if (truncated.ok() && truncated->valid()) {  // else held for replication, or nothing
      checkpoint_stats_.truncated_before = *truncated;
      ++checkpoint_stats_.truncations;
    }
  } else {
    checkpoint_stats_.last_error = status;
    ++checkpoint_stats_.failures;
    retry_checkpoint_.store(true);
  }
}

void ChannelFollower::RequestSeal(const std::shared_ptr<Shard>& shard,
                                  const std::string& partition) {
  // While catching up, the log may still hold the CreateSegment an earlier owner appended for
  // this very segment: ask only once the reader has reached what this WAL appends.
  if (!scanner_->tailing()) return shard->ReleaseSealClaim(partition);
  std::weak_ptr<Shard> weak = shard;
  wal_->Append(
      trace::Context(),
      NewCreateSegmentMessage(shard->vchannel(), shard->schema().collection_id, partition),
      [weak, partition, vchannel = shard->vchannel()](absl::StatusOr<wal::AppendResult> r) {
        if (r.ok()) return;
        spdlog::warn(
            "sealing the growing segment of {} partition {}: {} (asked again at the next "
            "insert or age check)",
            vchannel, partition, r.status().ToString());
        if (auto s = weak.lock()) s->ReleaseSealClaim(partition);
      });
}

absl::Status ChannelFollower::Drain(bool chase) {
  // The scanner has no cancellation of its own: a chase waits in short slices so a stop (or a
  // caught-up chase) is noticed promptly. Without a chase, only what is ready now.
  constexpr absl::Duration kSlice = absl::Milliseconds(10);
  const trace::Context ctx;
  for (uint64_t applied = 0;; ++applied) {
    if (applied % 256 == 255) {  // a long catch-up still stops promptly
      absl::MutexLock lock(&mu_);
      if (stopping_) return absl::OkStatus();
    }
    const absl::Time deadline = chase ? absl::Now() + kSlice : absl::InfinitePast();
    absl::StatusOr<ImmutableMessagePtr> m = scanner_->Next(ctx, deadline);
    if (!m.ok()) {
      if (!absl::IsDeadlineExceeded(m.status())) return m.status();
      if (!chase || !(chase = Chasing())) return absl::OkStatus();
      continue;
    }
    if (*m == nullptr) continue;
    if (absl::Status s = applier_.Apply(**m); !s.ok()) return s;
    applied_messages_.fetch_add(1, std::memory_order_relaxed);
    SampleAge((*m)->id(), (*m)->timetick().value(), LogBytes(**m));
    if (chase) chase = Chasing();
  }
}

}  // namespace kf::query
