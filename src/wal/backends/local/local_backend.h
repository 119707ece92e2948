// LocalBackend: one open pchannel log on local disk (the WalBackend of NewLocalOpener).
//
// Writing: Append assigns the id under a lock and copies the entry into the open record batch
// of the queue (a new batch past max_batch_bytes; AppendEncoded encodes it there): the
// appender's copy reads bytes still in its own cache, where the writer's would read them from
// another core's. A writer thread takes everything queued, seals each batch (length, count,
// crc), writes it with one write (several batches are each synced before the next), fdatasyncs
// once, re-checks the fence, publishes the new durable end to readers and runs the callbacks in
// id order (group commit);
// appends arriving meanwhile form the next group. The active segment is preallocated ahead of
// its data, so an fdatasync flushes data only (no file-size journal commit). One thread does it
// all: writing is a page-cache copy, small next to the fdatasync, so a separate sync thread
// would win little throughput and cost every lone append one more thread wake-up (tens of
// microseconds on a VM). While groups are small, a ZeroAhead thread writes zeros just past the
// data, so their fdatasyncs flush data only. A write or sync error is sticky: that group and
// everything after fail, nothing is written again. A higher fence fails the group with FENCED.
// An appender that ends its hold with EndAppendsWritingHere may do the writer's work for one
// group itself, when the writer would otherwise be woken from idle for it.
//
// Thread-safety: thread-safe. Callbacks run without locks held on the writer thread, the
// completion thread or (EndAppendsWritingHere) the appender's; they must be cheap and must not
// call Close().
// Ownership: owns its files and writer thread; scanners share the LogState and may outlive it.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>  // std::jthread
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "wal/backend.h"
#include "wal/backends/local/local_opener.h"
#include "wal/backends/local/log_state.h"
#include "wal/backends/local/zero_ahead.h"

namespace kf::wal::local {

// Set when another instance in this process opened the pchannel at a higher term, so the
// fenced instance fails fast without waiting for its next on-disk check.
struct FenceSignal {
  std::atomic<bool> fenced{false};
  std::atomic<bool> closed{false};  // the instance was closed: it no longer blocks a reopen
};

class LocalBackend final : public WalBackend {
 public:
  // The writer side of a recovered log: `active` is open for appending at its end, `state`
  // already lists every segment (the active one last, its limit = its size).
  struct WriterInit {
    std::unique_ptr<fs::WritableFile> active;
    std::shared_ptr<Segment> active_segment;
    uint64_t next_offset = 0;
  };

  // Read-only backend.
  LocalBackend(const LocalOpenerOptions& options, std::string pchannel, Term term,
               std::shared_ptr<LogState> state);
  // Writer backend; starts the writer thread. `flush_duration`: OpenOptions::flush_duration.
  LocalBackend(const LocalOpenerOptions& options, std::string pchannel, Term term,
               std::shared_ptr<LogState> state, WriterInit init, std::shared_ptr<FenceSignal> fence,
               metrics::Histogram* flush_duration);
  ~LocalBackend() override;

  std::string_view pchannel() const override { return pchannel_; }
  Term term() const override { return term_; }
  absl::StatusOr<MessageId> Append(std::string data, AppendCallback done) override;
  absl::StatusOr<MessageId> AppendEncoded(
      absl::FunctionRef<void(const MessageId& id, std::string* out)> encode,
      AppendCallback done) override;
  void BeginAppends() override;
  void EndAppends() override;
  // Writes, syncs and completes what is queued on this thread when it is all the log has in
  // flight (the writer idle, no group awaiting its callbacks), it is small and no other
  // pchannel's appender is doing the same (so at most one of the server's gRPC threads waits
  // for a disk); else wakes the writer, as EndAppends.
  void EndAppendsWritingHere() override;
  absl::StatusOr<std::unique_ptr<BackendScanner>> Read(const ReadOptions& options) override;
  MessageId NextId() const override;
  absl::StatusOr<MessageId> TailStart(uint64_t bytes) override;
  absl::Status Truncate(const MessageId& id) override;
  // The readable (durable, valid) bytes of every segment still listed.
  std::optional<uint64_t> StoredBytes() const override;
  absl::Status Close() override;

 private:
  // Appends not yet written: record batches back to back in `bytes`, the last one open.
  struct Queue {
    struct Batch {
      size_t start;  // in `bytes`
      uint64_t base;
      uint32_t count;
    };
    std::string bytes;
    std::vector<Batch> batches;
    std::vector<AppendCallback> callbacks;  // one per entry, in id order
    uint64_t data_bytes = 0;                // the entries' sizes, as counted in queue_bytes_
  };
  // Where a written batch landed, published once the group is durable.
  struct Written {
    Segment* segment;
    uint64_t pos;
    uint64_t size;
    uint64_t base;
    uint32_t count;
  };

  // Written and synced groups still to be completed, in id order: fence check, publication to
  // readers, callbacks. Many callbacks (each may wake a waiting thread) and the fence check (a
  // directory listing) on the writer thread would delay the next write and fdatasync, so large
  // groups are completed on the completion thread while the writer goes on with the next. A
  // group is acknowledged only after a fence check that began after its own sync, so a fence
  // written before its data hit the disk still wins.
  struct Completion {
    std::vector<AppendCallback> callbacks;
    absl::Status status;  // of the write and sync; OK: the fence check is still to come
    uint64_t bytes = 0;   // released from queue_bytes_ once the callbacks ran
    std::vector<Written> written;
    std::vector<std::shared_ptr<Segment>> new_segments;  // rolled by this group
  };
  // An appender writes a group itself only below this size: a larger one would hold a gRPC
  // thread for long, and its fdatasync dominates the hand-off it saves.
  static constexpr uint64_t kWriteHereBytes = 256 << 10;
  // Held by the appender writing a group itself, process-wide (EndAppendsWritingHere).
  static std::atomic<bool> someone_writing_here_;
  // The log whose appender last offered to write here, process-wide, and when (steady clock,
  // ns; reset when that log closes). An appender writes here only while no other open log
  // offered within kOthersActiveNs: one thread may serve every log's callers (the server's
  // CompletionLoop), and two logs writing there would take turns with their fdatasyncs
  // instead of syncing side by side on their writer threads.
  static std::atomic<const LocalBackend*> last_offer_by_;
  static std::atomic<int64_t> last_offer_ns_;
  static constexpr int64_t kOthersActiveNs = 5'000'000;

  // Groups this small complete inline on the writer thread, and so does any group when no
  // other waits to be written (the writer would only sleep meanwhile): otherwise a lone
  // appender, or a lone produce request of many messages, pays one more thread wake-up.
  static constexpr size_t kInlineCompletions = 4;

  void WriterLoop();
  // Takes what is queued into writing_ and marks the writer busy; returns the sticky error.
  absl::Status TakeGroup() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes, syncs and completes writing_ (taken by TakeGroup), then marks the writer idle. By
  // the writer thread, or by an appender in EndAppendsWritingHere.
  void WriteTakenGroup(absl::Status earlier);
  // Writes and syncs one group. By whoever holds writer_busy_.
  absl::Status WriteAndSync(Queue& group, Completion* c);
  void CompletionLoop();
  // Completes `c` inline or hands it to the completion thread, keeping id order.
  void Complete(Completion c);
  // Fence check and publication of a synced group (making a fence sticky), then callbacks.
  void Finish(Completion& c);
  // Seals and writes one group's batches into the page cache (writer thread only); every batch
  // but the last is synced before the next is written, WriteAndSync syncs the last.
  absl::Status WriteGroup(Queue& group, std::vector<Written>* written);
  // Starts a segment whose first entry is `base`.
  absl::Status Roll(uint64_t base);
  // Keeps the active segment preallocated past `end` (file_system.h, Preallocate: the
  // fdatasyncs then flush data only), kReserveStep ahead and at most to the roll size, so an
  // idle pchannel holds little unused disk.
  void ReserveFor(uint64_t end);
  static constexpr uint64_t kReserveStep = 8 << 20;
  absl::Status CheckFence();
  // The highest fence term in fence/, listed through fence_dir_ (opened by the first call).
  absl::StatusOr<std::optional<Term>> FenceTermOnDisk();
  void Publish(const std::vector<Written>& written,
               std::vector<std::shared_ptr<Segment>>& new_segments);

  const LocalOpenerOptions options_;
  fs::FileSystem* const fs_;
  const std::string pchannel_;
  const Term term_;
  const bool read_only_;
  std::shared_ptr<LogState> state_;
  std::shared_ptr<FenceSignal> fence_;
  metrics::Histogram* const flush_duration_ = nullptr;  // may be null
  // The fence directory, kept open for the fence check after every group.
  absl::Mutex fence_mu_;
  std::unique_ptr<fs::DirectoryLister> fence_dir_ ABSL_GUARDED_BY(fence_mu_);
  // The highest fence in fence_dir_'s last listing: the answer while it is Unchanged.
  std::optional<Term> fence_on_disk_ ABSL_GUARDED_BY(fence_mu_);

  mutable absl::Mutex mu_;
  absl::CondVar work_cv_;
  Queue queue_ ABSL_GUARDED_BY(mu_);
  // The callback storage of a completed group, empty, reused by queue_ so that appends do not
  // regrow (and move) it from nothing for every group.
  std::vector<AppendCallback> spare_callbacks_ ABSL_GUARDED_BY(mu_);
  static constexpr size_t kMaxSpareEntries = 16384;  // keeps at most 512 KiB of callbacks
  uint64_t queue_bytes_ ABSL_GUARDED_BY(mu_) = 0;    // queued + being written
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  int appending_ ABSL_GUARDED_BY(mu_) = 0;  // holds: BeginAppends not yet ended
  // A group is being written (writing_ and the members below are in use): by the writer thread
  // or by an appender writing it itself.
  bool writer_busy_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);  // sticky write error or FENCED
  bool closed_ ABSL_GUARDED_BY(mu_) = false;

  // Used only by whoever set writer_busy_ (the writer thread, or an appender writing a group
  // itself): handed over under mu_.
  std::shared_ptr<fs::WritableFile> active_;
  std::shared_ptr<Segment> active_segment_;
  std::vector<std::shared_ptr<Segment>> new_segments_;  // rolled, not yet published
  uint64_t reserved_ = 0;  // the active segment is preallocated this far
  // The group being written: swapped with queue_, so both keep their capacity.
  Queue writing_;
  static constexpr size_t kMaxKeptQueueBytes = 16 << 20;  // a larger buffer is freed after use

  // Writer thread -> completion thread.
  absl::Mutex done_mu_;
  std::deque<Completion> completions_ ABSL_GUARDED_BY(done_mu_);
  bool completer_busy_ ABSL_GUARDED_BY(done_mu_) = false;  // running a popped group
  bool writer_done_ ABSL_GUARDED_BY(done_mu_) = false;

  // Zeroes the active segment ahead of small groups (writer only; null when read-only).
  // Destroyed after the writer thread, which uses it.
  std::unique_ptr<ZeroAhead> zero_ahead_;
  static constexpr uint64_t kZeroAheadBytes = 4 << 20;

  absl::Mutex close_mu_;  // serialises Close()
  std::jthread completer_;
  std::jthread writer_;
};

}  // namespace kf::wal::local
