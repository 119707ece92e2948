#include "query/channel_follower.h"

#include <algorithm>
#include <utility>

#include "trace/context.h"

namespace kf::query {

absl::StatusOr<std::unique_ptr<ChannelFollower>> ChannelFollower::Start(
    std::shared_ptr<wal::Wal> wal, ShardOptions options) {
  absl::StatusOr<std::unique_ptr<wal::Scanner>> scanner =
      wal->Read(wal::ScanOptions{.internal = true});
  if (!scanner.ok()) return scanner.status();
  return std::unique_ptr<ChannelFollower>(
      new ChannelFollower(std::move(wal), options, std::move(*scanner)));
}

ChannelFollower::ChannelFollower(std::shared_ptr<wal::Wal> wal, ShardOptions options,
                                 std::unique_ptr<wal::Scanner> scanner)
    : wal_(std::move(wal)), applier_(wal_->pchannel(), options), scanner_(std::move(scanner)) {
  thread_ = std::thread([this] { Run(); });
}

ChannelFollower::~ChannelFollower() {
  stop_.store(true, std::memory_order_release);
  thread_.join();
}

absl::Status ChannelFollower::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

void ChannelFollower::Run() {
  // The scanner has no cancellation of its own: wait in short slices so a stop is prompt.
  constexpr absl::Duration kSlice = absl::Milliseconds(100);
  const trace::Context ctx;
  absl::Status stopped;
  while (!stop_.load(std::memory_order_acquire)) {
    absl::StatusOr<ImmutableMessagePtr> m = scanner_->Next(ctx, absl::Now() + kSlice);
    if (!m.ok()) {
      if (absl::IsDeadlineExceeded(m.status())) continue;
      stopped = m.status();
      break;
    }
    if (*m == nullptr) continue;
    if (absl::Status s = applier_.Apply(**m); !s.ok()) {
      stopped = std::move(s);
      break;
    }
  }
  absl::MutexLock lock(&mu_);
  status_ = std::move(stopped);
}

}  // namespace kf::query
