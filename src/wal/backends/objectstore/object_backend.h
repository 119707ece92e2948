// ObjectBackend: one open pchannel log in an object store (the WalBackend of NewObjectOpener).
//
// Writing: Append assigns the id under a lock and adds the entry to the open block (closing it
// once full; NextId() keeps it open until the next Append, so it tells the id Append gives).
// Uploader threads (max_parallel_uploads) close the open block by the adaptive policy of
// ObjectOpenerOptions and PUT it with a conditional create; a PUT that keeps failing is
// retried with backoff until upload_timeout. A completion thread takes finished blocks in
// order, checks the log's generation in the metadata store (fenced: fail instead), publishes
// them to readers and runs the callbacks in id order. A failed block is sticky: it and every
// later block fail with its error, and later Appends are refused.
// The first block of a new segment waits until every earlier block completed, then seals the
// previous segment and registers the new one with one metadata CAS (segment roll).
//
// Thread-safety: thread-safe. Callbacks run on the completion thread without locks held; they
// must be cheap and must not call Close().
// Sealed segments of small blocks are compacted by a background thread (compactor.h), which
// first deletes what a truncation left behind.
// Ownership: owns its threads; scanners share the LogView and may outlive it.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <thread>  // std::jthread
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "wal/backend.h"
#include "wal/backends/objectstore/block_format.h"
#include "wal/backends/objectstore/log_meta.h"
#include "wal/backends/objectstore/log_view.h"
#include "wal/backends/objectstore/object_opener.h"

namespace kf::wal::objectstore {

class ObjectBackend final : public WalBackend {
 public:
  // Read-only backend over a refreshed view.
  ObjectBackend(const ObjectOpenerOptions& options, Term term, std::shared_ptr<LogView> view);
  // Writer backend: `meta` as OpenForWrite left it (the open segment last, also last in the
  // view). Starts the threads. `flush_duration`: OpenOptions::flush_duration.
  ObjectBackend(const ObjectOpenerOptions& options, Term term, std::shared_ptr<LogView> view,
                VersionedMeta meta, metrics::Histogram* flush_duration);
  ~ObjectBackend() override;

  std::string_view pchannel() const override { return view_->layout().pchannel(); }
  Term term() const override { return term_; }
  absl::StatusOr<MessageId> Append(std::string data, AppendCallback done) override;
  absl::StatusOr<std::unique_ptr<BackendScanner>> Read(const ReadOptions& options) override;
  MessageId NextId() const override;
  absl::StatusOr<MessageId> TailStart(uint64_t bytes) override;
  absl::Status Truncate(const MessageId& id) override;
  std::optional<uint64_t> StoredBytes() const override;
  absl::Status Close() override;

 private:
  struct Block {
    uint64_t segment = 0;
    uint64_t index = 0;
    absl::Time opened;
    BlockBuilder builder;
    std::vector<AppendCallback> callbacks;
    uint64_t queued_bytes = 0;  // released from queue_bytes_ once completed
    bool done = false;          // upload finished (guarded by mu_)
    absl::Status status;        // its outcome (guarded by mu_)
  };
  using BlockPtr = std::shared_ptr<Block>;

  void UploadLoop();
  // Waits for a block to upload: the next closed one, or the open one once the flush policy
  // says so. Null when the backend is closing and nothing is left.
  // `just_finished`: the caller completed an upload, so the open block goes up now.
  BlockPtr TakeBlock(bool just_finished, bool* roll) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseOpenBlock() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Upload(Block& block);
  // Seals the segment before `segment` and registers `segment` (one metadata CAS).
  absl::Status Roll(uint64_t segment);
  void CompletionLoop();
  // FENCED unless the log's generation is still the one this writer opened.
  absl::Status CheckGeneration();
  void Publish(const std::vector<BlockPtr>& blocks);
  // Writes `next` over meta_ by CAS; a conflict is FENCED if another writer opened the log.
  absl::Status UpdateMeta(const std::function<void(kingfisher::v1::ObjectLogMeta*)>& change)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(meta_mu_);
  void CompactorLoop();
  // Deletes the objects of segments below the truncation point that a crash (or a failed
  // delete) left behind: one LIST when there are none.
  void CollectGarbage();
  // Deletes every object of `segment`.
  absl::Status DeleteSegmentObjects(uint64_t segment, absl::Time deadline);
  // Compacts sealed segment `segment`; failures are logged and leave it as it was.
  void Compact(uint64_t segment);
  absl::Time RequestDeadline(absl::Time limit) const;
  MessageId NextIdLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // NextId() keeps the open block from being flushed until the next Append, or at most this
  // long (far beyond any sequencer's NextId-to-Append gap, even under a sanitizer).
  static constexpr absl::Duration kNextIdPin = absl::Seconds(10);

  const ObjectOpenerOptions options_;
  const Term term_;
  const bool read_only_;
  const std::shared_ptr<LogView> view_;
  metrics::Histogram* const flush_duration_ = nullptr;  // may be null
  uint64_t generation_ = 0;

  absl::Mutex meta_mu_;  // serialises metadata changes (roll, truncate)
  VersionedMeta meta_ ABSL_GUARDED_BY(meta_mu_);

  mutable absl::Mutex mu_;
  absl::CondVar work_cv_;  // uploaders: a block to take, or the flush policy may trip
  BlockPtr open_ ABSL_GUARDED_BY(mu_);
  std::deque<BlockPtr> queue_ ABSL_GUARDED_BY(mu_);    // closed, not yet taken
  std::deque<BlockPtr> pending_ ABSL_GUARDED_BY(mu_);  // closed, not yet completed, in order
  int uploading_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t queue_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t segment_ ABSL_GUARDED_BY(mu_) = 0;  // where new blocks go
  uint64_t next_block_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t segment_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time segment_created_ ABSL_GUARDED_BY(mu_);
  uint64_t next_segment_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t ready_segment_ ABSL_GUARDED_BY(mu_) = 0;  // registered in the metadata
  bool rolling_ ABSL_GUARDED_BY(mu_) = false;
  bool completing_ ABSL_GUARDED_BY(mu_) = false;  // a group is popped but not yet published
  absl::Status error_ ABSL_GUARDED_BY(mu_);       // sticky upload failure or FENCED
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  mutable absl::Time pinned_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Uploaders waiting out a pin (their deadline is pinned_until_): the Append that ends the pin
  // wakes them all (there may be several uploaders, and a Signal could pick another).
  int pin_waiters_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<uint64_t> compact_queue_ ABSL_GUARDED_BY(mu_);  // sealed segments to compact
  bool closed_ ABSL_GUARDED_BY(mu_) = false;

  absl::Mutex close_mu_;  // serialises Close()
  std::jthread compactor_;
  std::jthread completer_;
  std::vector<std::jthread> uploaders_;
};

}  // namespace kf::wal::objectstore
