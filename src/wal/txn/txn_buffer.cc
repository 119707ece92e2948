#include "wal/txn/txn_buffer.h"

#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "message/properties.h"
#include "wal/txn/txn_keepalive.h"
#include "wal/txn/txn_message.h"

namespace kf::wal {
namespace {

absl::Status Corrupt(const ImmutableMessage& m, std::string_view why) {
  return absl::DataLossError(absl::StrCat("message ", m.id().ToText(), " (",
                                          ToAbsl(MessageTypeName(m.type())), "): ", ToAbsl(why)));
}

}  // namespace

TxnBuffer::TxnBuffer(TxnBufferOptions options) : options_(options) {}

absl::Status TxnBuffer::Feed(ImmutableMessagePtr msg, std::vector<ImmutableMessagePtr>* out) {
  if (!sticky_.ok()) return sticky_;
  const ImmutableMessage& m = *msg;
  const MessageType type = m.type();
  if (type == MessageType::kTxn) {
    // Also protects AsTxnMessage's invariant: only TxnBuffer makes kTxn ImmutableMessages.
    return Corrupt(m, "a synthetic Txn message is never appended; the log is corrupt");
  }
  if (m.timetick().value() != 0) ExpireBefore(m.timetick());

  std::optional<kingfisher::v1::TxnContext> ctx = m.message().txn();
  if (!ctx) {
    if (IsTxnControlType(type)) return Corrupt(m, "transaction control message without `_tx`");
    if (m.message().HasProperty(prop::kTxn)) return Corrupt(m, "`_tx` does not decode");
    if (IsExclusiveType(type)) {
      std::vector<TxnId> failed;
      for (const auto& [id, txn] : txns_) {
        if (txn.vchannel == m.vchannel()) failed.push_back(id);
      }
      for (TxnId id : failed) Drop(id);
    }
    out->push_back(std::move(msg));
    return absl::OkStatus();
  }

  const TxnId id(ctx->txn_id());
  auto it = txns_.find(id);
  switch (type) {
    case MessageType::kBeginTxn: {
      if (it != txns_.end()) Drop(id);  // ids never repeat; keep the newer, complete one
      Held txn;
      txn.vchannel = std::string(m.vchannel());
      txn.keepalive_ms = EffectiveKeepaliveMs(ctx->keepalive_ms() < 0 ? 0 : ctx->keepalive_ms());
      txn.deadline = TxnDeadline(m.timetick(), txn.keepalive_ms);
      it = txns_.emplace(id, std::move(txn)).first;
      deadlines_.emplace(it->second.deadline, id);
      return Hold(it->second, std::move(msg));
    }
    case MessageType::kCommitTxn: {
      if (it == txns_.end()) return absl::OkStatus();  // begun before this reader, or expired
      std::vector<ImmutableMessagePtr> inner = std::move(it->second.messages);
      inner.push_back(std::move(msg));
      Drop(id);
      out->push_back(TxnMessage::Assemble(std::move(inner)));
      return absl::OkStatus();
    }
    case MessageType::kRollbackTxn:
      if (it != txns_.end()) Drop(id);
      return absl::OkStatus();
    default: {  // a body
      if (it == txns_.end()) return absl::OkStatus();
      Held& txn = it->second;
      deadlines_.erase({txn.deadline, id});
      txn.deadline = TxnDeadline(m.timetick(), txn.keepalive_ms);
      deadlines_.emplace(txn.deadline, id);
      return Hold(txn, std::move(msg));
    }
  }
}

absl::Status TxnBuffer::Hold(Held& txn, ImmutableMessagePtr msg) {
  const size_t bytes = msg->message().EncodedSize();
  if (held_bytes_ + bytes > options_.max_held_bytes) {
    sticky_ = absl::ResourceExhaustedError(absl::StrCat(
        "transaction buffer of this reader is full: holding ", held_bytes_, " bytes of ",
        txns_.size(), " uncommitted transactions, the next message needs ", bytes, " more (limit ",
        options_.max_held_bytes, ")"));
    return sticky_;
  }
  held_bytes_ += bytes;
  txn.bytes += bytes;
  txn.messages.push_back(std::move(msg));
  return absl::OkStatus();
}

void TxnBuffer::ExpireBefore(TimeTick tt) {
  while (!deadlines_.empty() && deadlines_.begin()->first < tt) {
    Drop(deadlines_.begin()->second);
  }
}

void TxnBuffer::Drop(TxnId id) {
  auto it = txns_.find(id);
  if (it == txns_.end()) return;
  deadlines_.erase({it->second.deadline, id});
  held_bytes_ -= it->second.bytes;
  txns_.erase(it);
}

}  // namespace kf::wal
