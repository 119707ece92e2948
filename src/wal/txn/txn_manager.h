// TxnManager: the append-side transaction state machine of one pchannel, free of I/O
// (docs/semantics.md §3).
//
// The pchannel's sequencer calls it with the timetick it has just allocated for the message it
// is stamping, before encoding it, so an error means "reject, append nothing":
//   BeginTxn  -> the TxnContext to write into the Begin's `_tx` (txn id = the Begin's timetick,
//                unique per pchannel because timeticks strictly increase across terms);
//   SetBeginId once the backend has assigned the Begin's MessageId (needed for the LCMID);
//   AddBody   -> OK, then exactly one BodyDurable or BodyFailed when the body's append ends;
//   Commit    -> OK and a CommitGate that fires once every in-flight body is durable;
//   Rollback;  ObserveWatermark(tt) on every TimeTick; FailVChannel on every exclusive message;
//   EarliestActiveBegin when computing a message's LCMID = min(own id, that Begin's id).
//
// Life cycle: kActive --Commit--> kCommitting --(in-flight bodies durable)--> kCommitted;
// kActive --Rollback--> kRolledBack; kActive --(a body/commit/watermark later than
// `last activity + keepalive`, see txn_keepalive.h)--> kExpired; kActive/kCommitting --
// (FailVChannel, BodyFailed, FailTxn)--> kFailed. Only kActive txns hold back the LCMID: once the
// Commit/Rollback is stamped, or the txn expired or failed, readers no longer need its Begin.
//
// Errors (absl::Status with a streaming code, errors.h):
// - INVALID_ARGUMENT: BeginTxn with a negative keepalive or no vchannel.
// - TRANSACTION_EXPIRED (ABORTED): body/Commit/Rollback of an expired txn. Sticky: once expired,
//   always expired (as long as the txn is remembered, see retired_memory).
// - INVALID_TRANSACTION_STATE (FAILED_PRECONDITION): unknown txn, txn already committing /
//   committed / rolled back / failed, or a request naming another vchannel than the Begin's
//   (that request is rejected; the txn itself is unharmed).
// - INVALID_ARGUMENT: a body that would take its txn past max_txn_bytes (rejected; the txn is
//   unharmed and may still commit what it holds, or roll back).
// - RATE_LIMITED (RESOURCE_EXHAUSTED): a Begin or body that would take the active txns past
//   max_open_bytes (rejected, the txn unharmed; retry once others commit, roll back or expire).
// A rejected call changes nothing except the expiry transition it reports.
//
// Thread-safety: thread-safe (one internal mutex). Callbacks (CommitGate) run outside the mutex,
// on the thread that made them ready: inside Commit when nothing is in flight, else inside
// BodyDurable/BodyFailed/FailTxn. They must be cheap and must not take a lock the
// caller of those methods holds (the sequencer lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/hybrid_time.h"
#include "common/strong_id.h"
#include "kingfisher/v1/message.pb.h"
#include "message/message_id.h"

namespace kf::wal {

// Called exactly once with OK when every body of a committing txn is durable, or with the
// failure that failed the txn meanwhile (a body's append error, FailTxn's cause).
using CommitGate = absl::AnyInvocable<void(absl::Status) &&>;

struct TxnManagerOptions {
  // How many finished (committed, rolled back, expired, failed) txns are remembered so that a
  // late request gets the precise error (e.g. TRANSACTION_EXPIRED rather than "unknown").
  size_t retired_memory = 4096;
  // The most a txn may hold (0: no bound): its bodies' encoded sizes plus kTxnMessageBytes for
  // each of its messages, Begin and Commit included. A committed txn is delivered, and
  // replicated, as one message: one larger than a node may send could never be read.
  uint64_t max_txn_bytes = 0;
  // The most the active txns of the pchannel may hold together, counted alike (0: no bound).
  // Every reader of the pchannel holds them while it assembles Txns (TxnBuffer): its buffer
  // must be larger, or a reader would fail.
  uint64_t max_open_bytes = 0;
};

// What each message of a txn counts beyond its encoded size: its framing inside the delivered
// Txn, and the header of a replicated copy.
inline constexpr uint64_t kTxnMessageBytes = 512;

// The Begin that bounds the LCMID of every message stamped while its txn is active.
struct ActiveBegin {
  TxnId txn_id;
  TimeTick timetick;
  MessageId id;
};

class TxnManager {
 public:
  enum class State { kActive, kCommitting, kCommitted, kRolledBack, kExpired, kFailed };

  explicit TxnManager(TxnManagerOptions options = {});
  TxnManager(const TxnManager&) = delete;
  TxnManager& operator=(const TxnManager&) = delete;
  ~TxnManager();

  // Registers a txn on `vchannel` begun at `tt`. keepalive_ms 0 means the default (10 s).
  // Returns {txn_id = tt, keepalive_ms = effective keepalive}: write it into the Begin's `_tx`
  // and return it in the AppendResult.
  absl::StatusOr<kingfisher::v1::TxnContext> BeginTxn(std::string_view vchannel,
                                                      int64_t keepalive_ms, TimeTick tt);
  // Every timetick up to `tt` was handed out by an earlier owner (the last one in the log when
  // this instance opened): a request naming an unknown txn id <= tt is TRANSACTION_EXPIRED, as
  // its txn died with that owner (docs/semantics.md §3), instead of INVALID_TRANSACTION_STATE.
  void SetOpenedAfter(TimeTick tt);

  // Records the Begin's MessageId. Until then the txn is not reported by EarliestActiveBegin
  // (its Begin is not in the log yet, so no reader needs it). Unknown ids are ignored.
  void SetBeginId(TxnId txn_id, const MessageId& begin_id);

  // Admits a body stamped `tt` of `encoded_bytes`; on OK the body is in flight until
  // BodyDurable/BodyFailed.
  absl::Status AddBody(TxnId txn_id, std::string_view vchannel, TimeTick tt,
                       uint64_t encoded_bytes = 0);
  // An admitted body is durable. Call exactly once per admitted body (or BodyFailed).
  void BodyDurable(TxnId txn_id);
  // A body's append failed: the txn fails with `cause` (nothing more of it may be appended).
  void BodyFailed(TxnId txn_id, absl::Status cause);

  // Admits the CommitTxn stamped `tt`. On OK, `gate` fires once (see CommitGate); on error it
  // is destroyed uncalled. Acknowledge the commit only after both the Commit message is durable
  // and the gate fired OK.
  absl::Status Commit(TxnId txn_id, std::string_view vchannel, TimeTick tt, CommitGate gate);
  // Admits the RollbackTxn stamped `tt`. In-flight bodies need not be waited for.
  absl::Status Rollback(TxnId txn_id, std::string_view vchannel, TimeTick tt);

  // A message of this txn could not be enqueued (nothing written), or the txn must be abandoned
  // for another reason: fails it with `cause` unless it already finished. Returns false if the
  // txn is unknown or finished.
  bool FailTxn(TxnId txn_id, absl::Status cause);

  // The watermark `tt` (a TimeTick's timetick): expires every active txn whose deadline is
  // earlier, so an abandoned txn never holds back the LCMID. Returns the expired ids.
  std::vector<TxnId> ObserveWatermark(TimeTick tt);
  // An exclusive message was stamped on `vchannel`: fails its active txns. Returns their ids.
  std::vector<TxnId> FailVChannel(std::string_view vchannel);

  // The oldest active txn whose Begin id is known, or nullopt (then LCMID = own id).
  std::optional<ActiveBegin> EarliestActiveBegin() const;

  // For tests and diagnostics: the state of `txn_id`, nullopt if unknown (never begun or
  // forgotten beyond retired_memory).
  std::optional<State> GetState(TxnId txn_id) const;
  // Txns not yet retired (active, committing, or finished with bodies still in flight).
  size_t LiveCount() const;

 private:
  struct Txn {
    std::string vchannel;
    int64_t keepalive_ms = 0;
    TimeTick begin_tt;
    std::optional<MessageId> begin_id;
    TimeTick deadline;  // last activity + keepalive
    State state = State::kActive;
    int64_t inflight = 0;
    uint64_t bytes = 2 * kTxnMessageBytes;  // against max_txn_bytes: Begin, Commit, bodies
    absl::Status failure;                   // why kFailed
    CommitGate gate;                        // set while kCommitting
  };
  struct Retired {
    State state;
    absl::Status failure;
  };
  // A gate made ready under the mutex, to be called after releasing it.
  struct ReadyGate {
    CommitGate gate;
    absl::Status status;
  };

  // The error for a request on `txn_id` that is not kActive (or unknown), or OK.
  absl::Status CheckActiveLocked(TxnId txn_id, std::string_view vchannel, std::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Expires `txn` if `tt` is past its deadline; returns TRANSACTION_EXPIRED then.
  absl::Status CheckDeadlineLocked(TxnId txn_id, Txn& txn, TimeTick tt, std::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RATE_LIMITED if `bytes` more would take the active txns past max_open_bytes.
  absl::Status CheckOpenBytesLocked(uint64_t bytes, std::string_view what) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Leaves kActive for `state` (drops it from the LCMID, deadline and open-bytes counts).
  void DeactivateLocked(TxnId txn_id, Txn& txn, State state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves a finished txn with nothing in flight to the retired memory; fires a committing
  // txn's gate once nothing is in flight.
  void SettleLocked(TxnId txn_id, std::vector<ReadyGate>* ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FailLocked(TxnId txn_id, Txn& txn, absl::Status cause) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Fire(std::vector<ReadyGate> ready);

  const TxnManagerOptions options_;
  mutable absl::Mutex mu_;
  absl::btree_map<TxnId, Txn> live_ ABSL_GUARDED_BY(mu_);
  // Active txns by deadline (expiry) and by id = begin order (LCMID).
  absl::btree_set<std::pair<TimeTick, TxnId>> deadlines_ ABSL_GUARDED_BY(mu_);
  absl::btree_set<TxnId> active_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<TxnId, Retired> retired_ ABSL_GUARDED_BY(mu_);
  std::deque<TxnId> retired_order_ ABSL_GUARDED_BY(mu_);
  TimeTick opened_after_ ABSL_GUARDED_BY(mu_);
  uint64_t open_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // what the active txns hold
};

std::string_view TxnStateName(TxnManager::State state);

}  // namespace kf::wal
