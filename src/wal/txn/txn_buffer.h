// TxnBuffer: the read-side transaction assembler of one reader (docs/semantics.md §3
// "Transactions": consumers deliver one synthetic Txn message at the CommitTxn; rolled-back and
// expired txns are never delivered).
//
// Feed it every message the reader takes from the log, in WAL order; it appends to *out what to
// deliver, in order:
// - a message outside any txn (no `_tx`; TimeTicks included) passes through at once;
// - BeginTxn and bodies are held per txn id (nothing delivered);
// - CommitTxn delivers ONE TxnMessage (txn_message.h): the commit's id, timetick, LCMID and
//   `_tc`, with inner() = Begin, bodies, Commit;
// - RollbackTxn drops the txn (and is not delivered itself);
// - every message's timetick is a watermark (timeticks strictly increase in WAL order): a held
//   txn whose deadline (last Begin/body timetick + keepalive, txn_keepalive.h — the rule the
//   append side's TxnManager applies) is earlier is expired and dropped, before the message
//   itself is handled — so a Commit that comes too late finds nothing to commit, exactly as the
//   append side would have refused it;
// - an exclusive message (DDL) on a vchannel drops the txns held on it (TxnManager::FailVChannel
//   failed them; they can never commit).
// Messages of a txn whose Begin this reader never saw (it started after the Begin) are dropped:
// a reader sees a txn whole only when it starts at or before the Begin — which starting from an
// LCMID guarantees. The buffer trusts the log's txn structure (one vchannel per txn, bodies
// before the Commit): the append side enforces it.
//
// Errors (Feed): RESOURCE_EXHAUSTED when the held messages would exceed max_held_bytes — sticky,
// every later Feed fails the same way (the reader must be closed; delivering on would lose a
// txn). DATA_LOSS for a stored `Txn` message (never appended, so the log is corrupt), a txn
// control message without a decodable `_tx`, or a `_tx` that does not decode; that message is
// not delivered and the buffer stays usable.
//
// Thread-safety: not thread-safe; owned by its one reader. Messages are shared, never copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "common/hybrid_time.h"
#include "common/strong_id.h"
#include "message/message.h"

namespace kf::wal {

struct TxnBufferOptions {
  // Bytes (encoded size) of Begin/body messages held for uncommitted txns, per reader.
  size_t max_held_bytes = 128u << 20;
};

class TxnBuffer {
 public:
  explicit TxnBuffer(TxnBufferOptions options = {});

  // Handles `msg` (non-null) and appends zero or more messages to deliver to *out.
  absl::Status Feed(ImmutableMessagePtr msg, std::vector<ImmutableMessagePtr>* out);

  // Txns held (begun, not yet committed, rolled back or expired) and their bytes.
  size_t HeldTxns() const { return txns_.size(); }
  size_t HeldBytes() const { return held_bytes_; }

 private:
  struct Held {
    std::string vchannel;
    int64_t keepalive_ms = 0;
    TimeTick deadline;
    size_t bytes = 0;
    std::vector<ImmutableMessagePtr> messages;  // Begin, bodies
  };

  void ExpireBefore(TimeTick tt);
  void Drop(TxnId id);
  absl::Status Hold(Held& txn, ImmutableMessagePtr msg);

  const TxnBufferOptions options_;
  absl::Status sticky_;
  size_t held_bytes_ = 0;
  absl::btree_map<TxnId, Held> txns_;
  absl::btree_set<std::pair<TimeTick, TxnId>> deadlines_;
};

}  // namespace kf::wal
