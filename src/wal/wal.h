// Wal: the WAL adaptor of one pchannel (docs/semantics.md §1–§3) over a WalBackend.
//
// The adaptor is the pchannel's single writer (its sequencer): it stamps each message with a
// timetick at the moment it fixes the message's WAL position, so timeticks strictly increase
// in WAL order and no reader needs a reorder buffer. Under the same lock it runs the append
// interceptors: the collection rules (collections/collection_table.h: data on a missing or
// dropped collection, dim and partition checks, DDL state changes, so that nothing lands after
// a DropCollection), the transaction manager (BeginTxn assigns the txn id = its timetick; bodies,
// CommitTxn and RollbackTxn are admitted or rejected with TRANSACTION_EXPIRED /
// INVALID_TRANSACTION_STATE; an exclusive message fails the active txns of its vchannel; a
// TimeTick expires abandoned txns), then stamps the LCMID (`_lc` = the Begin of the oldest
// active txn, else `_lcs`) and the term (`_wt`). It deduplicates retried appends by idempotency
// key (`_ik`, state recovered from the log tail on open) and broadcast DDL copies by
// {vchannel, broadcast id} (state recovered from every DDL of the log on open), retries
// recoverable backend errors of non-txn messages with backoff (one `wal.appendimpl` span per
// attempt), and appends a persisted TimeTick periodically while there is traffic; an idle
// pchannel gets non-persisted TimeTicks (`_np`) that only tailing readers see.
//
// Durable messages enter the write-ahead buffer in WAL order; readers catch up from the
// backend, tail the buffer once caught up, and fall back on eviction (SwitchableScanner);
// each reader assembles committed transactions into one Txn message (TxnBuffer) and applies
// its filters.
//
// Thread-safe. Append is asynchronous; its callback runs on a backend or adaptor thread and
// must be cheap. Errors (docs/semantics.md §3): FENCED (ABORTED/CHANNEL_FENCED) after another owner
// took over — the Wal is then unusable and must be reopened at the new term; after Close, what
// it was closed with (ON_SHUTDOWN by default), also from its readers; RESOURCE_EXHAUSTED under
// back-pressure; an ambiguous failure (UNAVAILABLE) when a message may or may not be durable;
// COLLECTION_NOT_FOUND (NOT_FOUND), COLLECTION_EXISTS (ALREADY_EXISTS) and INVALID_ARGUMENT from
// the collection rules (docs/ddl-node.md), with nothing written.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/hybrid_time.h"
#include "common/strong_id.h"
#include "kingfisher/v1/checkpoint.pb.h"
#include "kingfisher/v1/message.pb.h"
#include "kingfisher/v1/replicate.pb.h"
#include "message/message.h"
#include "message/message_id.h"
#include "storage/tso/timestamp_source.h"
#include "trace/context.h"
#include "wal/backend.h"
#include "wal/buffer/write_ahead_buffer.h"
#include "wal/deliver_filter.h"
#include "wal/txn/txn_buffer.h"
#include "wal/txn/txn_manager.h"

namespace kf::metrics {
class Registry;
}

namespace kf::wal {

struct AppendResult {
  MessageId id;
  TimeTick timetick;
  MessageId last_confirmed;  // the LCMID of the message
  std::optional<kingfisher::v1::TxnContext> txn;
};
using AppendResultCallback = absl::AnyInvocable<void(absl::StatusOr<AppendResult>) &&>;

// One message of Wal::AppendBatch, with what Wal::Append would take for it.
struct AppendRequest {
  trace::Context ctx;
  MutableMessage msg;
  AppendResultCallback done;
};

struct WalOptions {
  std::string pchannel;
  // This cluster's id in a replicate configuration (docs/replication.md); empty: none, so the
  // pchannel is never a secondary and refuses replicated messages.
  std::string cluster_id;
  // Borrowed; must outlive the Wal. Timeticks come from here (the node's TSO batch source).
  TimestampSource* tso = nullptr;
  // Persisted TimeTick cadence while there is traffic (docs/semantics.md §3 default 200 ms).
  absl::Duration timetick_interval = absl::Milliseconds(200);
  // How far back from the tail the open-time scan decodes every entry to rebuild the `_ik`
  // state and the last timetick (before it, only DDL is decoded).
  uint64_t recovery_scan_bytes = 64ull << 20;
  // The pchannel's checkpoint of the WAL's state, if it has one (docs/recovery-storage.md):
  // Recover then reads only the DDL after it. Null: every DDL of the log. An error fails Recover.
  std::function<absl::StatusOr<std::optional<kingfisher::v1::WalState>>(const std::string&)>
      load_checkpoint;
  // Idempotency results remembered per producer (a retry older than this window is rejected
  // with FAILED_PRECONDITION instead of being appended twice).
  size_t dedup_window_per_producer = 4096;
  // Backend retry budget for recoverable errors (each attempt is one `wal.appendimpl` span).
  int max_append_attempts = 5;
  absl::Duration initial_backoff = absl::Milliseconds(5);
  // The write-ahead buffer tailing readers share (docs/semantics.md §3 defaults 64 MiB, 30 s).
  WriteAheadBufferOptions buffer;
  TxnManagerOptions txn;
  // Per reader: bytes of uncommitted txns held while assembling Txn messages.
  TxnBufferOptions txn_buffer;
  // Where the Wal's metrics go (wal_metrics.h); borrowed, must outlive the Wal. Null: the
  // process-wide metrics::DefaultRegistry().
  metrics::Registry* metrics = nullptr;
  // Asked before each run of appends holding an Insert (appending thread, no lock; must be
  // cheap): an error refuses the run's Inserts with it and appends nothing of them (the node's
  // growing-memory limit, docs/search.md). Empty: every Insert is admitted.
  std::function<absl::Status()> admit_inserts;
  // AppendBatch's callers submit one batch and wait for its answers before the next (a produce
  // stream reads its next request after the last one was handed over; the replicate appender
  // waits), so a backend whose writer is idle may write the batch on the calling thread
  // (WalBackend::EndAppendsWritingHere): one thread wake-up less per round trip. Off for a
  // caller that keeps many batches in flight from one thread: it would stop submitting while
  // it syncs, and the groups would shrink to one batch each.
  bool batch_appenders_write = false;
};

// Where a reader starts (docs/semantics.md §3 DeliverPolicy).
struct DeliverPolicy {
  enum class Kind { kAll, kLatest, kStartFrom, kStartAfter };
  Kind kind = Kind::kAll;
  MessageId id;  // for kStartFrom (inclusive) / kStartAfter (exclusive)
};

struct ScanOptions {
  DeliverPolicy policy;
  // Empty: the whole pchannel. Otherwise messages of other vchannels are dropped
  // (pchannel-level messages, e.g. TimeTick, always pass).
  std::string vchannel;
  DeliverFilter filter;  // applied to what would be delivered (Txn judged as a whole)
  // A reader of the node itself (the query follower, docs/search.md), not a consumer: its
  // catch-up opens no `wal.catchup_consume` spans (the tracing contract has none for it) and
  // readers() does not count it, though it keeps the buffer retaining messages as any reader.
  bool internal = false;
};

// Reads one pchannel (or vchannel) in WAL order = timetick order: every committed message
// once; a committed transaction as one Txn message (txn/txn_message.h) at its CommitTxn, if
// the reader started at or before its BeginTxn (start from an LCMID to be sure); rolled-back,
// expired and failed transactions never. Not thread-safe; must not outlive its Wal.
class Scanner {
 public:
  virtual ~Scanner() = default;
  // The next message, waiting until `deadline` (DEADLINE_EXCEEDED then; the scanner stays
  // usable). Catch-up reads open a `wal.catchup_consume` span per non-txn message and CommitTxn
  // under the message's own trace (`ctx` is only the cancellation/base context) and overwrite
  // its `_tc`; tailing reads return the buffer's shared message untouched.
  virtual absl::StatusOr<ImmutableMessagePtr> Next(const trace::Context& ctx,
                                                   absl::Time deadline) = 0;

  // Event-driven reading, for serving many tailing readers from one thread.
  // True while Next is served from memory (the write-ahead buffer): with a passed deadline it
  // returns at once, without I/O. A reader of the backend is not tailing.
  virtual bool tailing() const { return false; }
  // While tailing and nothing is ready: registers `wake` (replacing an earlier one) and returns
  // true; the WAL calls it once, on its appending thread with no lock held (so it must only
  // schedule work), when Next may have something. False: Next has something now, or the
  // scanner is not tailing.
  virtual bool NotifyWhenReadable(absl::AnyInvocable<void() &&> /*wake*/) { return false; }
};

class Wal {
 public:
  virtual ~Wal() = default;

  virtual const std::string& pchannel() const = 0;
  virtual Term term() const = 0;

  // Appends `msg` (already validated: ValidateProducedMessage). Runs `wal.append` under
  // `ctx` and calls `done` exactly once: with the result once the message is durable, or
  // with the error. A message whose `_ik` was seen before gets the original result and is not
  // appended again (if the original is still in flight, `done` waits for it).
  virtual void Append(const trace::Context& ctx, MutableMessage msg, AppendResultCallback done) = 0;

  // Appends `requests` in their order, as one Append each would (same results, spans and
  // errors), but lets the adaptor pass runs of ordinary messages through its sequencer and
  // its bookkeeping together: what a producer with many messages queued should call. With
  // WalOptions::batch_appenders_write the callbacks may run on the calling thread before
  // AppendBatch returns, so the caller holds no lock that they take. The default calls Append
  // for each.
  virtual void AppendBatch(std::vector<AppendRequest> requests);

  // Blocking convenience over Append.
  absl::StatusOr<AppendResult> AppendSync(const trace::Context& ctx, MutableMessage msg);

  virtual absl::StatusOr<std::unique_ptr<Scanner>> Read(const ScanOptions& options) = 0;

  // The last timetick handed out (0 before the first append).
  virtual TimeTick LastTimeTick() const = 0;

  // A TimeTick now instead of at the next interval (a search waits for its shard to apply a
  // timestamp, docs/search.md): persisted if anything was appended since the last one, else
  // one for tailing readers only; none while the last append is still in flight.
  virtual void RequestTimeTick() {}

  // Replication (docs/replication.md): the configuration of the pchannel's last
  // AlterReplicateConfig and, per source cluster, the checkpoint of what was replicated from it
  // and is durable: where a replicator resumes.
  virtual kingfisher::v1::WalReplicateState replicate_state() const { return {}; }
  // How many messages (TimeTicks left out) became durable after timetick `tt`: a replicator's
  // lag in messages behind its secondary's checkpoint. Approximate (it may count up to 15 too
  // many); nullopt when `tt` is older than what this WAL counted (before it was opened here).
  virtual std::optional<uint64_t> MessagesAfter(TimeTick /*tt*/) const { return std::nullopt; }

  // Scanners currently open, internal ones (ScanOptions::internal) left out.
  virtual int readers() const = 0;

  // OK, or the sticky error that broke the WAL: a durable-path failure (the backend's store
  // gone for too long) or FENCED. A broken WAL refuses appends until its owner reopens it.
  virtual absl::Status Health() const { return absl::OkStatus(); }

  // The backend's WalBackend::StoredBytes (metrics); nullopt when it cannot tell.
  virtual std::optional<uint64_t> StoredBytes() const { return std::nullopt; }

  // Lets the backend reclaim the log below `keep` (docs/recovery-storage.md "Truncation"); it
  // does so in whole segments, so some of it may stay readable. Reading a position it reclaimed
  // fails with OUT_OF_RANGE naming the earliest readable id. What replication still needs is
  // kept (HoldForReplication): returns the id truncation went up to, MessageId() when held
  // entirely. UNIMPLEMENTED where not supported.
  virtual absl::StatusOr<MessageId> TruncateBefore(const MessageId& /*keep*/) {
    return absl::UnimplementedError("this WAL does not truncate");
  }

  // Replication's hold on truncation (docs/replication.md "Truncation"): while this pchannel
  // replicates to `secondary` (an edge from this cluster in its configuration, or a recorded
  // handover), TruncateBefore keeps the log from `from` on, where that secondary's replicator
  // resumes (its checkpoint's LCMID; MessageId(): from the start). nullopt releases it (handed
  // over, fenced). A secondary no replicator has reported on holds the whole log.
  virtual void HoldForReplication(const std::string& /*secondary*/,
                                  std::optional<MessageId> /*from*/) {}

  // Stops accepting appends, waits for in-flight ones to finish, stops the timetick loop and
  // closes the backend. Later appends, and its readers, fail with `rejection`: an owner that
  // lost the pchannel passes a routing error (CHANNEL_NOT_EXIST, ...) so that clients wait for
  // the new assignment; OK means ON_SHUTDOWN ("closing"), a server stopping. Idempotent: the
  // first call's rejection stays.
  virtual void Close(absl::Status rejection) = 0;
  void Close() { Close(absl::OkStatus()); }
};

// Opens the adaptor over an opened backend: reads the log once from its start (every DDL:
// collection state and broadcast dedupe; the tail: last timetick, idempotency state), raises
// the TSO above the last timetick, starts the timetick loop.
absl::StatusOr<std::unique_ptr<Wal>> OpenWal(WalOptions options,
                                             std::unique_ptr<WalBackend> backend);

}  // namespace kf::wal
