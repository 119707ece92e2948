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
  RecoveredState state{.replicate = ReplicateState(options.cluster_id)};
  state.broadcasts = NewBroadcastTable();
  state.idempotency = NewIdempotencyTable(options.dedup_window_per_producer);
  ASSIGN_OR_RETURN(MessageId tail, backend.TailStart(options.tail_bytes));
  ReadOptions read{.start = ReadOptions::Start::kEarliest};
  std::optional<MessageId> checkpointed;  // DDL up to it are in the checkpoint
  if (const kingfisher::v1::WalState* c = options.checkpoint; c != nullptr) {
    auto after = MessageId::Decode(c->after_id());
    if (!after.ok()) {
      return StreamingError(StreamingCode::kDataLoss,
                            absl::StrCat("pchannel ", options.pchannel,
                                         ": the checkpoint's WAL position does not decode: ",
                                         after.status().message()));
    }
    checkpointed = *after;
    state.last_id = *after;
    state.last_timetick = TimeTick(c->after_timetick());
    state.collections.LoadFrom(*c);
    state.replicate.LoadFrom(*c);
    for (const kingfisher::v1::WalBroadcast& b : c->broadcasts()) {
      auto id = MessageId::Decode(b.id());
      auto lc = MessageId::Decode(b.last_confirmed());
      if (!id.ok() || !lc.ok()) {
        return StreamingError(
            StreamingCode::kDataLoss,
            absl::StrCat("pchannel ", options.pchannel,
                         ": a broadcast result of the checkpoint does not decode"));
      }
      state.broadcasts->Recover(
          IdempotencyKey{.producer = b.vchannel(), .sequence = b.broadcast_id()},
          AppendResult{.id = *id, .timetick = TimeTick(b.timetick()), .last_confirmed = *lc});
    }
    read = tail < *after ? ReadOptions{.start = ReadOptions::Start::kFrom, .id = tail}
                         : ReadOptions{.start = ReadOptions::Start::kAfter, .id = *after};
  }
  ASSIGN_OR_RETURN(auto scanner, backend.Read(read));
  for (;;) {
    // The WAL has no writer yet, so everything durable is already readable: a past deadline
    // returns at once, and DEADLINE_EXCEEDED means "end of log".
    auto entry = scanner->Next(absl::InfinitePast());
    if (absl::IsDeadlineExceeded(entry.status())) break;
    if (!entry.ok()) return entry.status();
    if (!state.last_id || *state.last_id < entry->id) state.last_id = entry->id;
    const bool in_tail = !(entry->id < tail);
    const bool new_ddl = !checkpointed || *checkpointed < entry->id;
    const MessageType type = MutableMessage::DecodeType(entry->data);
    if (!in_tail && !(new_ddl && (IsExclusiveType(type) || state.replicate.secondary()))) {
      continue;
    }
    auto msg = MutableMessage::Decode(entry->data);
    if (!msg.ok()) {
      return StreamingError(
          StreamingCode::kDataLoss,
          absl::StrCat("pchannel ", options.pchannel, ": entry ", entry->id.ToText(),
                       " does not decode: ", msg.status().message()));
    }
    const std::optional<TimeTick> tt = msg->timetick();
    if (new_ddl) state.replicate.Replay(*msg);
    if (new_ddl && IsExclusiveType(msg->type())) {
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
