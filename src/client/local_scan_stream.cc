#include "client/local_scan_stream.h"

#include <algorithm>
#include <utility>

#include "wal/txn/txn_message.h"

namespace kf::client {

kingfisher::ConsumedMessage ToConsumed(const ImmutableMessage& m) {
  kingfisher::ConsumedMessage out;
  out.id = m.id();
  out.type = m.type();
  out.timetick = m.timetick();
  out.last_confirmed = m.last_confirmed();
  out.vchannel = std::string(m.vchannel());
  out.properties = m.message().properties();
  out.payload = m.message().payload();
  if (const wal::TxnMessage* txn = wal::AsTxnMessage(m)) {
    for (const ImmutableMessagePtr& inner : txn->inner())
      out.messages.push_back(ToConsumed(*inner));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<LocalScanStream>> LocalScanStream::Open(
    Router::Route route, std::shared_ptr<wal::Wal> wal, const wal::ScanOptions& options) {
  absl::StatusOr<std::unique_ptr<wal::Scanner>> scanner = wal->Read(options);
  if (!scanner.ok()) return scanner.status();
  return std::unique_ptr<LocalScanStream>(
      new LocalScanStream(std::move(route), std::move(wal), *std::move(scanner)));
}

LocalScanStream::LocalScanStream(Router::Route route, std::shared_ptr<wal::Wal> wal,
                                 std::unique_ptr<wal::Scanner> scanner)
    : route_(std::move(route)), wal_(std::move(wal)), scanner_(std::move(scanner)) {}

DeliveryStream::Wait LocalScanStream::WaitFor(absl::Time deadline) {
  // The scanner has no cancellation of its own: wait in short slices so Cancel is prompt.
  constexpr absl::Duration kSlice = absl::Milliseconds(100);
  const trace::Context ctx;
  for (;;) {
    if (next_.has_value()) return Wait::kMessage;
    if (cancelled_.load(std::memory_order_acquire)) return Wait::kCancelled;
    if (ended_) return Wait::kEnded;
    const absl::Time now = absl::Now();
    if (now >= deadline) return Wait::kDeadline;
    absl::StatusOr<ImmutableMessagePtr> m = scanner_->Next(ctx, std::min(deadline, now + kSlice));
    if (m.ok()) {
      if (*m != nullptr) next_ = ToConsumed(**m);
    } else if (!absl::IsDeadlineExceeded(m.status())) {
      ended_ = true;
      status_ = m.status();
    }
  }
}

kingfisher::ConsumedMessage LocalScanStream::Pop() {
  kingfisher::ConsumedMessage m = std::move(*next_);
  next_.reset();
  return m;
}

}  // namespace kf::client
