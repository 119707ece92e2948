#include "wal/delivering_scanner.h"

#include <utility>

namespace kf::wal {

DeliveringScanner::DeliveringScanner(std::unique_ptr<Scanner> raw, DeliverFilter filter,
                                     TxnBufferOptions txn)
    : raw_(std::move(raw)), filter_(std::move(filter)), txns_(txn) {}

absl::StatusOr<ImmutableMessagePtr> DeliveringScanner::Next(const trace::Context& ctx,
                                                            absl::Time deadline) {
  for (;;) {
    while (!ready_.empty()) {
      ImmutableMessagePtr m = std::move(ready_.front());
      ready_.pop_front();
      if (filter_.Pass(*m)) return m;
    }
    absl::StatusOr<ImmutableMessagePtr> raw = raw_->Next(ctx, deadline);
    if (!raw.ok()) return raw.status();
    fed_.clear();
    absl::Status fed = txns_.Feed(*std::move(raw), &fed_);
    for (auto& m : fed_) ready_.push_back(std::move(m));
    if (!fed.ok()) return fed;
  }
}

}  // namespace kf::wal
