// DeliveringScanner: what a Wal reader receives. Wraps the raw scanner of one reader (WAL order,
// every message once: SwitchableScanner) and turns its output into deliveries: committed
// transactions become one Txn message at their CommitTxn (TxnBuffer), Begin, bodies, rolled-back
// and expired transactions are held or dropped, and the reader's DeliverFilter is applied.
//
// Thread-safety: none (one reader). Errors: the raw scanner's, and TxnBuffer's (DATA_LOSS for a
// corrupt txn message, RESOURCE_EXHAUSTED when uncommitted txns exceed the reader's budget).
#pragma once

#include <deque>
#include <memory>

#include "wal/deliver_filter.h"
#include "wal/txn/txn_buffer.h"
#include "wal/wal.h"

namespace kf::wal {

class DeliveringScanner final : public Scanner {
 public:
  DeliveringScanner(std::unique_ptr<Scanner> raw, DeliverFilter filter, TxnBufferOptions txn);

  absl::StatusOr<ImmutableMessagePtr> Next(const trace::Context& ctx, absl::Time deadline) override;
  bool tailing() const override { return raw_->tailing(); }
  bool NotifyWhenReadable(absl::AnyInvocable<void() &&> wake) override {
    return ready_.empty() && raw_->NotifyWhenReadable(std::move(wake));
  }

 private:
  std::unique_ptr<Scanner> raw_;
  const DeliverFilter filter_;
  TxnBuffer txns_;
  std::deque<ImmutableMessagePtr> ready_;  // assembled, filter not applied yet
  std::vector<ImmutableMessagePtr> fed_;   // scratch for TxnBuffer::Feed
};

}  // namespace kf::wal
