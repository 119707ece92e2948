#include "query/channel_follower.h"

#include <algorithm>
#include <utility>

#include "message/builders.h"
#include "spdlog/spdlog.h"
#include "trace/context.h"

namespace kf::query {

absl::StatusOr<std::unique_ptr<ChannelFollower>> ChannelFollower::Start(
    std::shared_ptr<wal::Wal> wal, ShardOptions options, absl::Duration drain_interval) {
  absl::StatusOr<std::unique_ptr<wal::Scanner>> scanner =
      wal->Read(wal::ScanOptions{.internal = true});
  if (!scanner.ok()) return scanner.status();
  return std::unique_ptr<ChannelFollower>(
      new ChannelFollower(std::move(wal), options, drain_interval, std::move(*scanner)));
}

ChannelFollower::ChannelFollower(std::shared_ptr<wal::Wal> wal, ShardOptions options,
                                 absl::Duration drain_interval,
                                 std::unique_ptr<wal::Scanner> scanner)
    : wal_(std::move(wal)),
      applier_(wal_->pchannel(), options,
               [this](const std::shared_ptr<Shard>& shard, const std::string& partition) {
                 RequestSeal(shard, partition);
               }),
      drain_interval_(drain_interval),
      scanner_(std::move(scanner)) {
  thread_ = std::thread([this] { Run(); });
}

ChannelFollower::~ChannelFollower() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
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
  }
  absl::MutexLock lock(&mu_);
  status_ = std::move(stopped);
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
            "insert)",
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
    if (chase) chase = Chasing();
  }
}

}  // namespace kf::query
