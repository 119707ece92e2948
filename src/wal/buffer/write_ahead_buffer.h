// WriteAheadBuffer: the most recent durable messages of one pchannel, in WAL order, shared
// read-only by every tailing reader (docs/semantics.md §3 "Write-ahead buffer").
//
// The WAL adaptor appends each message once it and everything before it are durable, so a
// TailingReader delivers a message as soon as it may be delivered at all. Messages are held as
// ImmutableMessagePtr: every reader receives the same object (no copy, no mutation; docs/tracing.md
// §5: tailing opens no consume span). Non-persisted TimeTicks (`_np`) live here only.
//
// Memory is bounded: entries are evicted from the head by size (sum of EncodedSize(), default
// 64 MiB) and by age (keepalive, default 30 s, measured by an injectable clock). The buffer
// never waits for a slow reader; a reader whose next entry was evicted gets OUT_OF_RANGE and
// falls back to catch-up from the backend (SwitchableScanner does that). The full capacity is
// for readers that lag: entries every open reader has returned are evicted beyond the last
// `passed_bytes` (default 4 MiB), kept for readers that open or switch from catch-up just
// behind the tail. A buffer that always held 64 MiB would make the allocator hand out memory
// last touched 64 MiB of messages ago, cold in every cache: that cost the produce path a third
// of its throughput (docs/performance.md).
//
// Coverage: the buffer knows it holds every persisted message with id > horizon() (the last
// evicted id, options.starts_after, or the id carried by a non-persisted tick that was the
// first entry), plus the run starting at its first retained persisted message. A position
// outside that is NOT_FOUND.
//
// Event-driven readers: instead of a thread blocked in Next, a reader that has caught up may
// register a wake-up (TailingReader::NotifyWhenReadable); the next Append, Skip or Close calls
// it once on the appending thread after unlocking, so one appending thread wakes one dispatcher
// rather than every reader's thread.
//
// Thread-safety: all methods are thread-safe; a TailingReader is used by one thread at a time.
// Ownership: create with Create(); readers hold a shared_ptr to the buffer, so the buffer lives
// until its last reader is gone.
// Errors: Append → FAILED_PRECONDITION (out of order, bad np tick), INVALID_ARGUMENT (null),
// Close's error (its `why`, by default UNAVAILABLE/ON_SHUTDOWN) after Close. Read* → NOT_FOUND
// (position not covered: evicted, or before anything known), Close's error. TailingReader::Next
// → DEADLINE_EXCEEDED (the reader stays usable), OUT_OF_RANGE "evicted" (IsEvictedError; the
// reader is then unusable), Close's error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "message/message.h"
#include "message/message_id.h"

namespace kf::wal {

struct WriteAheadBufferOptions {
  // Eviction by size: the sum of the retained messages' EncodedSize() stays <= this. A single
  // message larger than this is not retained (readers fall back to catch-up for it).
  size_t capacity_bytes = size_t{64} << 20;
  // Entries that every open reader has returned are evicted once they and the entries after
  // them hold more than this (also with no reader open).
  size_t passed_bytes = size_t{4} << 20;
  // Eviction by age: an entry appended at t is evicted at the first Append/EvictExpired call
  // at or after t + keepalive.
  absl::Duration keepalive = absl::Seconds(30);
  // Time source for keepalive; empty = absl::Now. Tests inject a fake clock.
  std::function<absl::Time()> clock;
  // The id of the last durable message when the buffer is created (the adaptor knows it from
  // its open-time tail scan). Readers positioned after it can tail at once; without it the
  // buffer covers only positions from its first appended message on. Later appends must
  // follow it like any other append. An invalid MessageId means the log is empty: the buffer
  // covers every position (MessageId() = from the beginning) until its first eviction.
  std::optional<MessageId> starts_after;
};

// True for the error a TailingReader returns when its next entry was evicted (fall back).
bool IsEvictedError(const absl::Status& status);

class WriteAheadBuffer;

// A cursor over a WriteAheadBuffer. Not thread-safe (one reader); independent readers may
// run concurrently. Holds the buffer alive.
class TailingReader {
 public:
  TailingReader(const TailingReader&) = delete;
  TailingReader& operator=(const TailingReader&) = delete;
  ~TailingReader();

  // The next entry in WAL order, waiting for an Append until `deadline`. Errors: see above.
  absl::StatusOr<ImmutableMessagePtr> Next(absl::Time deadline);

  // If Next would wait now, registers `wake` (replacing one registered before) and returns
  // true: the next Append, Skip or Close calls it once, on its own thread with no lock held, so
  // `wake` must only schedule work. False if Next has something to return (an entry, an
  // eviction, a close) without waiting; `wake` is then dropped.
  bool NotifyWhenReadable(absl::AnyInvocable<void() &&> wake);

 private:
  friend class WriteAheadBuffer;
  // Entries whose (id, is_np) sorts below (start_id, start_np) are skipped: guards against a
  // reader opened at a position the adaptor has not appended yet.
  TailingReader(std::shared_ptr<WriteAheadBuffer> buffer, uint64_t seq, MessageId start_id,
                bool start_np)
      : buffer_(std::move(buffer)), seq_(seq), start_id_(start_id), start_np_(start_np) {}

  std::shared_ptr<WriteAheadBuffer> buffer_;
  uint64_t seq_;  // sequence number of the next entry to return
  MessageId start_id_;
  bool start_np_;
  // Guarded by buffer_->mu_; registered <=> this reader is in buffer_->waiting_.
  absl::AnyInvocable<void() &&> wake_;
};

class WriteAheadBuffer : public std::enable_shared_from_this<WriteAheadBuffer> {
 public:
  static std::shared_ptr<WriteAheadBuffer> Create(WriteAheadBufferOptions options = {});
  WriteAheadBuffer(const WriteAheadBuffer&) = delete;
  WriteAheadBuffer& operator=(const WriteAheadBuffer&) = delete;

  // Appends a durable message (or a non-persisted TimeTick) and wakes waiting readers, then
  // evicts by size and age.
  // REQUIRES (the adaptor's contract): called in WAL order, once `msg` and every message
  // before it are durable; every durable message from the first one appended onward is
  // appended (a gap would be invisible to readers).
  // Accepted: msg->id() > the last id; or, for a TimeTick with `_np`, msg->id() >= the last id
  // (it carries the id of the last persisted message) and a timetick above the last entry's.
  // Anything else is FAILED_PRECONDITION and changes nothing.
  absl::Status Append(ImmutableMessagePtr msg);

  // Evicts entries older than the keepalive (Append does this too; the adaptor may call it
  // from a timer so an idle buffer releases memory).
  void EvictExpired();

  // Records that the durable message `id` (timetick `tt`), and any before it not appended,
  // are not retained — the adaptor retains nothing while no reader exists. Drops
  // every entry as an eviction would (readers positioned in or at the end of them get
  // OUT_OF_RANGE and fall back to catch-up) and covers only positions after `id` from now on.
  // REQUIRES: id >= the last id appended (same WAL-order contract as Append).
  void Skip(const MessageId& id, TimeTick tt);

  // A reader positioned at the first message with id >= `id` (inclusive), or after the
  // persisted message `id` (exclusive; non-persisted ticks carrying `id` are after it).
  // NOT_FOUND when the buffer does not cover the position (the caller reads the backend).
  // A position beyond the last appended entry is covered: the reader waits for it.
  absl::StatusOr<std::unique_ptr<TailingReader>> ReadFrom(const MessageId& id);
  absl::StatusOr<std::unique_ptr<TailingReader>> ReadAfter(const MessageId& id);

  // Rejects later Appends and Reads; waiting and later Next calls fail with `why`, or with
  // ON_SHUTDOWN when it is OK. A second Close keeps the first one's error.
  void Close(absl::Status why = absl::OkStatus());

  // Observability and tests.
  size_t size_bytes() const;
  size_t num_entries() const;
  std::optional<MessageId> horizon() const;

 private:
  friend class TailingReader;
  struct Entry {
    ImmutableMessagePtr msg;
    bool np;  // non-persisted TimeTick
    size_t bytes;
    absl::Time appended;
  };

  explicit WriteAheadBuffer(WriteAheadBufferOptions options);
  absl::Time Now() const;
  absl::Status AppendLocked(ImmutableMessagePtr msg, bool np, size_t bytes, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EvictLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PopFrontLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // True if every persisted message with id >= `id` (inclusive) or > `id` is retained or
  // still to come.
  bool CoversLocked(const MessageId& id, bool inclusive) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // What a closed buffer answers (Close's `why`, or ON_SHUTDOWN).
  absl::Status ClosedErrorLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::unique_ptr<TailingReader>> OpenReader(const MessageId& id, bool inclusive);
  absl::StatusOr<ImmutableMessagePtr> NextFor(TailingReader* reader, absl::Time deadline);
  // Whether `reader`'s Next would return without waiting.
  bool ReadableLocked(const TailingReader& reader) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Takes every registered wake-up, to be run after unlocking.
  std::vector<absl::AnyInvocable<void() &&>> TakeWakesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void RunWakes(std::vector<absl::AnyInvocable<void() &&>> wakes);

  const WriteAheadBufferOptions options_;
  mutable absl::Mutex mu_;
  absl::CondVar appended_;  // signalled on Append and Close
  std::deque<Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t head_seq_ ABSL_GUARDED_BY(mu_) = 0;  // sequence number of entries_.front()
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Every persisted message with id > horizon_ is retained (or not yet appended).
  std::optional<MessageId> horizon_ ABSL_GUARDED_BY(mu_);
  // The last entry ever appended (evicted or not): the ordering check.
  std::optional<MessageId> last_id_ ABSL_GUARDED_BY(mu_);
  TimeTick last_timetick_ ABSL_GUARDED_BY(mu_){0};
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status close_error_ ABSL_GUARDED_BY(mu_);             // OK: ON_SHUTDOWN
  std::vector<TailingReader*> waiting_ ABSL_GUARDED_BY(mu_);  // with a wake-up registered
  // Every open reader. A reader's seq_ changes under the shared lock (NextFor), so it is read
  // only under the exclusive one.
  std::vector<TailingReader*> readers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::wal
