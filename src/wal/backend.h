// The WAL backend SPI (docs/semantics.md §4): what the WAL adaptor needs from a log store. One
// interface, several implementations (src/wal/backends/<name>), chosen by config.
//
// A backend stores opaque entries (encoded messages) per pchannel. It knows nothing about
// timeticks, transactions or tracing; those live in the adaptor (src/wal).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/strong_id.h"
#include "message/message_id.h"

namespace kf::metrics {
class Histogram;
}  // namespace kf::metrics

namespace kf::wal {

// One stored entry, as read back.
struct Entry {
  MessageId id;
  std::string data;
};

// Runs exactly once per Append, on a backend thread: OK once the entry is durable (it will
// survive any crash from now on); otherwise the error. An entry whose callback failed may or
// may not be durable (e.g. fenced after fdatasync): the caller must treat it as ambiguous.
using AppendCallback = absl::AnyInvocable<void(absl::Status) &&>;

// Reads durable entries in id order. Not thread-safe; one reader per scanner.
class BackendScanner {
 public:
  virtual ~BackendScanner() = default;
  // The next durable entry. Waits until `deadline` for one to become durable, then returns
  // DEADLINE_EXCEEDED (the scanner stays usable). DATA_LOSS on corruption; CANCELLED after
  // the backend is closed.
  virtual absl::StatusOr<Entry> Next(absl::Time deadline) = 0;
};

struct ReadOptions {
  enum class Start {
    kEarliest,  // the first entry not truncated
    kLatest,    // the first entry appended after the scanner was created
    kFrom,      // `id` inclusive
    kAfter,     // `id` exclusive
  };
  Start start = Start::kEarliest;
  MessageId id;
};

// One open pchannel log at one term. Thread-safe.
class WalBackend {
 public:
  virtual ~WalBackend() = default;

  virtual std::string_view pchannel() const = 0;
  virtual Term term() const = 0;

  // Enqueues `data` as the next entry and returns the id it will have. Entries become durable
  // in call order (ids increase in call order); concurrent appends share one persistence
  // operation (group commit). The caller (the adaptor's sequencer) serialises calls when it
  // needs the id order to match its own order. Errors returned here mean nothing was enqueued
  // and `done` is not called: FENCED (ABORTED) once another owner took over, FAILED_PRECONDITION
  // after a sticky write error, CANCELLED after Close, RESOURCE_EXHAUSTED when the queue is
  // full, INVALID_ARGUMENT for an entry above the size limit.
  virtual absl::StatusOr<MessageId> Append(std::string data, AppendCallback done) = 0;

  // As Append, for an entry that `encode` appends to the string it is given (nothing else), on
  // the calling thread before AppendEncoded returns, told the id the entry gets: a backend that
  // queues entries in a buffer lets the adaptor encode straight into it, saving an allocation
  // and a copy per append. The default encodes into a string of its own, with NextId() as the
  // id (callers that need that to hold serialise their appends, as for Append), and calls Append.
  virtual absl::StatusOr<MessageId> AppendEncoded(
      absl::FunctionRef<void(const MessageId& id, std::string* out)> encode, AppendCallback done) {
    std::string data;
    encode(NextId(), &data);
    return Append(std::move(data), std::move(done));
  }

  // Bracket appends that the caller enqueues back to back (the sequencer's run of a batch). A
  // backend whose writer wakes at the first queued entry would otherwise take the first few
  // into a group of their own and the rest into the next, two persistence operations where one
  // would do; between the two calls it wakes its writer once, at EndAppends. The writer is not
  // held back when it is already busy: it takes what is queued, as always. EndAppends follows
  // every BeginAppends; the holds of concurrent runs may overlap (each ends after its run left
  // the sequencer's lock). The default does nothing.
  virtual void BeginAppends() {}
  virtual void EndAppends() {}
  // EndAppends for a caller that lets the backend write and complete what is queued on the
  // calling thread, callbacks included, before it returns: a local writer that is idle would
  // otherwise have to be woken for it, one more thread hand-off in a lone producer's round
  // trip (docs/performance.md). The caller holds no lock that a callback takes.
  virtual void EndAppendsWritingHere() { EndAppends(); }

  // OUT_OF_RANGE, naming the earliest readable id, for a position below a truncation.
  virtual absl::StatusOr<std::unique_ptr<BackendScanner>> Read(const ReadOptions& options) = 0;

  // The id the next Append will get (everything below it was appended, not necessarily durable).
  virtual MessageId NextId() const = 0;

  // An id from which reading covers at least the last `bytes` bytes of the log (or the
  // earliest entry): where the adaptor starts its tail-recovery scan (last timetick, `_ik`).
  virtual absl::StatusOr<MessageId> TailStart(uint64_t bytes) = 0;

  // Lets the backend reclaim entries up to and including `id`. Reads below it may then fail.
  virtual absl::Status Truncate(const MessageId& id) = 0;

  // Bytes the log occupies in its store, for the kf_wal_size_bytes metric; nullopt when the
  // backend cannot tell cheaply. Never blocks on I/O.
  virtual std::optional<uint64_t> StoredBytes() const { return std::nullopt; }

  // Stops the writer: waits for queued appends to finish (each callback runs), then rejects
  // new ones with CANCELLED. Idempotent.
  virtual absl::Status Close() = 0;
};

struct OpenOptions {
  std::string pchannel;
  // Opening at term T fences every instance with a lower term (FENCED on their next append,
  // also in other processes). Opening below the highest term seen fails with FENCED.
  Term term;
  bool read_only = false;  // a reader that never fences anyone
  // Observes the seconds of each of the backend's persistence operations, successful ones
  // (kf_wal_flush_duration_seconds, wal_metrics.h): local, a group's write and fdatasync;
  // objectstore, a block's upload; quorum, one member's AddEntries round trip. Null: none.
  // Must outlive the backend.
  metrics::Histogram* flush_duration = nullptr;
};

// Creates backends of one kind. Thread-safe.
class WalOpener {
 public:
  virtual ~WalOpener() = default;
  virtual absl::StatusOr<std::unique_ptr<WalBackend>> Open(const OpenOptions& options) = 0;
  virtual WalKind kind() const = 0;
};

}  // namespace kf::wal
