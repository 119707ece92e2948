#include "wal/recovery.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace kf::wal {

namespace {

// The result an append of `msg` at `id` returned, as recovered from the log.
AppendResult RecoveredResult(const MessageId& id, TimeTick tt, const MutableMessage& msg) {
  return AppendResult{.id = id,
                      .timetick = tt,
                      .last_confirmed = msg.last_confirmed().value_or(id),
                      .txn = msg.txn()};
}

}  // namespace

absl::StatusOr<RecoveredState> RecoverWal(WalBackend& backend, const RecoveryOptions& options) {
  RecoveredState state;
  state.broadcasts = NewBroadcastTable();
  state.idempotency = NewIdempotencyTable(options.dedup_window_per_producer);
  ASSIGN_OR_RETURN(MessageId tail, backend.TailStart(options.tail_bytes));
  ASSIGN_OR_RETURN(auto scanner, backend.Read({.start = ReadOptions::Start::kEarliest}));
  for (;;) {
    // The WAL has no writer yet, so everything durable is already readable: a past deadline
    // returns at once, and DEADLINE_EXCEEDED means "end of log".
    auto entry = scanner->Next(absl::InfinitePast());
    if (absl::IsDeadlineExceeded(entry.status())) break;
    if (!entry.ok()) return entry.status();
    state.last_id = entry->id;
    const bool in_tail = !(entry->id < tail);
    if (!in_tail && !IsExclusiveType(MutableMessage::DecodeType(entry->data))) continue;
    auto msg = MutableMessage::Decode(entry->data);
    if (!msg.ok()) {
      return StreamingError(
          StreamingCode::kDataLoss,
          absl::StrCat("pchannel ", options.pchannel, ": entry ", entry->id.ToText(),
                       " does not decode: ", msg.status().message()));
    }
    const std::optional<TimeTick> tt = msg->timetick();
    if (IsExclusiveType(msg->type())) {
      state.collections.Replay(*msg);
      if (auto key = BroadcastKey(*msg); key && tt) {
        state.broadcasts->Recover(*key, RecoveredResult(entry->id, *tt, *msg));
      }
    }
    if (!in_tail) continue;
    if (tt && *tt > state.last_timetick) state.last_timetick = *tt;
    if (auto ik = msg->idempotency_key()) {
      if (auto key = ParseIdempotencyKey(*ik); key.ok() && tt) {
        state.idempotency->Recover(*key, RecoveredResult(entry->id, *tt, *msg));
      }
    }
  }
  return state;
}

}  // namespace kf::wal
