// Producer: appends messages to the WAL with exactly-once retries (docs/semantics.md §3).
//
// Every message gets an idempotency key `_ik` = "<producer-id>:<sequence>" (a random 64-bit
// producer id in hex, a sequence increasing per Append call) and `_v`. Routing: the pchannel is
// PChannelOfVChannel(message.vchannel()); one Produce stream per pchannel carries many appends
// in flight, answered in any order.
//
// Batching (ProducerOptions::batching): a message is sent at once when fewer than
// max_inflight_requests requests of its pchannel await answers; otherwise it waits, with what
// else is queued for that pchannel, for the next request, which goes out as soon as one is
// answered. No linger timer: an idle producer pays no latency, a busy one sends big requests.
// Each message of a request is still acknowledged or failed on its own, retried on its own, and
// messages of one pchannel leave in the order they were appended.
//
// Retries (all with the SAME `_ik`, so the WAL appends the message at most once and answers a
// duplicate with the original result), with exponential backoff, until the append's deadline:
//   UNAVAILABLE (transport loss, server restart, ON_SHUTDOWN), DEADLINE_EXCEEDED of one
//   attempt, ABORTED for CHANNEL_NOT_EXIST / UNMATCHED_CHANNEL_TERM / CHANNEL_FENCED (the
//   pchannel is moving: wait for it), RESOURCE_EXHAUSTED (rate limited).
// Everything else fails at once.
//
// Transactions (docs/semantics.md §3): BeginTxn returns a Transaction whose bodies, Commit and
// Rollback go through this producer with the same keys and retries (see Transaction below):
//   auto txn = producer->BeginTxn("kf-dml_0_orders");          // StatusOr<unique_ptr<...>>
//   (*txn)->AppendSync(*kingfisher::InsertMessage("kf-dml_0_orders", rows));
//   auto commit = (*txn)->Commit();   // acknowledged => durable and visible as one Txn
//
// Tracing (docs/tracing.md §5): an autocommit append starts `wal.autocommit` (PRODUCER) under
// the message's trace context and injects it into `_tc`; each network attempt starts
// `wal.dist_append` (PRODUCER, child of wal.autocommit) and overwrites `_tc` of the copy it
// sends. Transaction bodies get no wal.autocommit: they carry the transaction's `wal.txn`.
//
// Connection: before opening a Produce stream the producer waits for the channel to be ready
// (wait-for-ready, docs/semantics.md §3), at most until the attempt's deadline; an attempt that
// finds no connection by then counts as a failed attempt (UNAVAILABLE) and is retried. So after a
// server restart the first retry goes out as soon as the server listens again. The wait happens on
// an internal thread: AppendAsync returns at once even while no server is reachable.
//
// Thread-safety: every method is thread-safe. Callbacks run on an internal thread (a stream
// reader or the retry timer) or, for immediate failures, on the calling thread; they must not
// block for long. A callback may call Append again.
// Ownership: destroying the Producer runs Close.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "kingfisher/message.h"
#include "kingfisher/types.h"

namespace kingfisher {

struct AppendResult {
  MessageId id;
  TimeTick timetick;
  // Reading from here yields every message with a timetick greater than this one's.
  MessageId last_confirmed;
  std::optional<TxnId> txn_id;  // set for transaction messages
};

// How a producer coalesces the messages it has queued for one pchannel into Produce requests.
struct BatchingOptions {
  // Requests of one pchannel awaiting their answers before new messages wait to be coalesced.
  // 1 by default: the node's log syncs one group at a time, so a second request in flight
  // only splits the producers into two smaller groups (docs/performance.md, issue 27).
  int max_inflight_requests = 1;
  // Bounds of one request; a message larger than max_bytes goes alone.
  size_t max_messages = 1024;
  size_t max_bytes = size_t{1} << 20;
};

struct ProducerOptions {
  // Empty: a random 16-hex-digit id. Give a stable id only if sequences are kept too.
  std::string producer_id;
  BatchingOptions batching;
};

struct AppendOptions {
  // Overall deadline; nullopt means now + ClientOptions::append_timeout.
  std::optional<Deadline> deadline;
};

using AppendCallback = std::function<void(absl::StatusOr<AppendResult>)>;

struct TxnOptions {
  // How long the server keeps the transaction open after its Begin or latest body without a
  // new one (docs/semantics.md §3). Zero = the server's default (10 s); negative is
  // INVALID_ARGUMENT.
  Duration keepalive = Duration::zero();
  // Deadline of every append of the transaction (Begin, bodies, Commit/Rollback); nullopt =
  // each append gets now + ClientOptions::append_timeout.
  std::optional<Deadline> deadline;
  // The caller's trace context: parent of the transaction's `wal.txn` span.
  TraceContext trace;
};

class Transaction;

class Producer {
 public:
  virtual ~Producer() = default;

  virtual const std::string& producer_id() const = 0;

  // Appends `message` asynchronously; `done` runs exactly once with the result.
  // Errors passed to `done`:
  //   INVALID_ARGUMENT    no/unknown type, no vchannel or one that names no pchannel, a
  //                       property key starting with '_' (never sent), or the server
  //                       rejected the message (nothing was written);
  //   FAILED_PRECONDITION the producer is closed (never sent); or the server's verdict (e.g.
  //                       INVALID_TRANSACTION_STATE): nothing was written;
  //   NOT_FOUND           the collection does not exist: nothing was written;
  //   ALREADY_EXISTS, DATA_LOSS, INTERNAL, ABORTED (TRANSACTION_EXPIRED, RESOURCE_ACQUIRED)
  //                       as returned by the server: nothing was written;
  //   DEADLINE_EXCEEDED   the deadline passed while retrying: the message MAY OR MAY NOT HAVE
  //                       BEEN APPENDED (an append with the same `_ik` is still deduplicated);
  //   UNAVAILABLE, ABORTED (fenced/term/not-on-node), RESOURCE_EXHAUSTED
  //                       retries exhausted (RetryPolicy::max_attempts): the message MAY OR
  //                       MAY NOT HAVE BEEN APPENDED;
  //   CANCELLED           the producer was closed while the append needed a retry: the
  //                       message MAY OR MAY NOT HAVE BEEN APPENDED.
  virtual void AppendAsync(Message message, AppendCallback done, AppendOptions options = {}) = 0;
  // AppendAsync with a future; same errors.
  std::future<absl::StatusOr<AppendResult>> Append(Message message, AppendOptions options = {});
  // Blocks until the append completes; same errors.
  absl::StatusOr<AppendResult> AppendSync(Message message, AppendOptions options = {});

  // Begins a transaction on `vchannel` (docs/semantics.md §3): appends a BeginTxn and returns once
  // the server acknowledged it with the txn id. Starts the transaction's `wal.txn` span (PRODUCER,
  // child of options.trace), which the Begin, every body and the Commit/Rollback carry.
  // Errors: those of AppendAsync for the Begin (nothing is begun unless OK); INVALID_ARGUMENT
  // also for a negative keepalive; INTERNAL when the server answered without a txn id (it
  // does not support transactions).
  // REQUIRES: the Producer outlives the returned Transaction.
  virtual absl::StatusOr<std::unique_ptr<Transaction>> BeginTxn(std::string vchannel,
                                                                TxnOptions options = {}) = 0;

  // Stops accepting appends (later ones fail with FAILED_PRECONDITION) and stops retrying;
  // waits until every pending append has run its callback (attempts in flight get their
  // answer or time out; appends that would need a retry fail with CANCELLED), then releases
  // the streams. Idempotent; run by the destructor. Must not be called from a callback.
  virtual void Close() = 0;
};

// Transaction: one open transaction on one vchannel, made by Producer::BeginTxn.
//
// Bodies (Insert/Delete) are appended through the producer with `_tx` = {txn id} and the
// same `_ik` retries as any append, except that TRANSACTION_EXPIRED (ABORTED) and
// INVALID_TRANSACTION_STATE (FAILED_PRECONDITION) fail at once: the caller retries the whole
// transaction with a new one (docs/semantics.md §3). Consumers see nothing of it until the commit,
// then one `Txn` message holding Begin, bodies and Commit.
//
// Tracing (docs/tracing.md §5): all of the transaction's messages carry the `wal.txn` context (no
// `wal.autocommit` per body); each network attempt still gets its own `wal.dist_append`. The
// span ends when Commit or Rollback completes, with status ERROR when it failed.
//
// Thread-safety: every method is thread-safe, but Commit and Rollback must not be called from
// a body's callback (Commit waits for those callbacks). Ownership: borrows its Producer.
// Destroying a Transaction that was neither committed nor rolled back sends a best-effort
// RollbackTxn without waiting for it (Producer::Close waits for it).
class Transaction {
 public:
  virtual ~Transaction() = default;

  virtual TxnId txn_id() const = 0;
  virtual const std::string& vchannel() const = 0;

  // Appends a body. The message's vchannel may be empty (the transaction's is used).
  // Errors passed to `done`: those of Producer::AppendAsync, and
  //   INVALID_ARGUMENT    not an Insert or Delete, or another vchannel (never sent);
  //   FAILED_PRECONDITION Commit or Rollback was already called (never sent), or the server's
  //                       INVALID_TRANSACTION_STATE;
  //   ABORTED             TRANSACTION_EXPIRED: the transaction is dead, start a new one.
  virtual void AppendAsync(Message message, AppendCallback done) = 0;
  std::future<absl::StatusOr<AppendResult>> Append(Message message);
  absl::StatusOr<AppendResult> AppendSync(Message message);

  // Waits until every body appended so far has completed, then appends the CommitTxn and
  // returns its result once the server acknowledged it (the transaction is then durable and
  // visible to consumers at the commit's timetick). Errors:
  //   the first failed body's error (its code kept; e.g. ABORTED TRANSACTION_EXPIRED): no
  //     CommitTxn was sent and the transaction was rolled back (best effort);
  //   FAILED_PRECONDITION Commit or Rollback was already called, or INVALID_TRANSACTION_STATE;
  //   ABORTED TRANSACTION_EXPIRED: nothing of the transaction will ever be visible;
  //   DEADLINE_EXCEEDED, UNAVAILABLE, CANCELLED: the commit MAY OR MAY NOT HAVE BEEN
  //     APPLIED (a consumer tells: the Txn message appears or not);
  //   otherwise the errors of Producer::AppendAsync.
  virtual absl::StatusOr<AppendResult> Commit() = 0;
  // Appends a RollbackTxn and waits for its acknowledgement: nothing of the transaction will be
  // visible. Bodies still in flight may then fail with INVALID_TRANSACTION_STATE. Errors:
  //   FAILED_PRECONDITION Commit or Rollback was already called, or INVALID_TRANSACTION_STATE;
  //   ABORTED TRANSACTION_EXPIRED (nothing is visible either way); otherwise as Commit.
  virtual absl::Status Rollback() = 0;
};

}  // namespace kingfisher
