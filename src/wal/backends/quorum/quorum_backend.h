// QuorumBackend: one open pchannel log of the quorum backend (NewQuorumOpener).
//
// Writing: Append assigns (segment, entry) under the lock and queues the entry in its segment.
// Each ensemble member of a segment has a sender thread that sends everything queued beyond
// that member's durable end in one AddEntries (one fdatasync there) and waits for the answer
// before sending more: appends arriving meanwhile form the next batch (group commit), and one
// member's order is the id order. The acker thread acknowledges entries in id order once 2
// members report them durable, and rolls segments: once a full segment is acknowledged it seals
// it and creates the next (new ensemble) in one metadata Txn, then starts the next segment's
// senders. A FENCED answer, a lost metadata CAS or an entry not durable on 2 members within
// `ack_timeout` fail the writer (sticky): every pending and later append fails.
//
// Thread-safety: thread-safe. Callbacks run on the acker thread without locks held; they must be
// cheap and must not call Close(). Ownership: owns its threads; shares the LogView with its
// scanners; borrows the pool and options (owned by the opener).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "wal/backend.h"
#include "wal/backends/quorum/log_view.h"
#include "wal/backends/quorum/logstore_client.h"
#include "wal/backends/quorum/quorum_meta.h"
#include "wal/backends/quorum/quorum_opener.h"

namespace kf::wal::quorum {

class QuorumBackend final : public WalBackend {
 public:
  // What Open hands a writer: its epoch, the segment it writes first (created in metadata) and
  // OpenOptions::flush_duration.
  struct WriterInit {
    uint64_t epoch = 0;
    uint64_t segment = 0;
    SegmentRecord record;
    metrics::Histogram* flush_duration = nullptr;
  };

  // Read-only backend.
  QuorumBackend(const QuorumOpenerOptions& options, LogStorePool* pool, std::string pchannel,
                Term term, std::unique_ptr<QuorumMeta> meta, std::shared_ptr<LogView> view);
  // Writer backend; starts its threads.
  QuorumBackend(const QuorumOpenerOptions& options, LogStorePool* pool, std::string pchannel,
                Term term, std::unique_ptr<QuorumMeta> meta, std::shared_ptr<LogView> view,
                WriterInit init);
  ~QuorumBackend() override;

  std::string_view pchannel() const override { return pchannel_; }
  Term term() const override { return term_; }
  absl::StatusOr<MessageId> Append(std::string data, AppendCallback done) override;
  absl::StatusOr<std::unique_ptr<BackendScanner>> Read(const ReadOptions& options) override;
  MessageId NextId() const override;
  absl::StatusOr<MessageId> TailStart(uint64_t bytes) override;
  absl::Status Truncate(const MessageId& id) override;
  std::optional<uint64_t> StoredBytes() const override;
  absl::Status Close() override;

 private:
  struct Waiter {
    AppendCallback done;
    absl::Time enqueued;
    uint64_t bytes;
  };
  // One segment being written. Guarded by mu_.
  struct Segment {
    uint64_t id = 0;
    SegmentRecord record;  // created in metadata once record.mod_revision != 0
    bool rolled = false;   // full: later appends go to the next segment
    bool sealed = false;   // sealed in metadata; senders finish their replica, send Seal, exit
    absl::Time opened;
    uint64_t base = 0;  // data[0] is entry `base`; entries every member has are dropped
    std::deque<std::shared_ptr<const std::string>> data;
    uint64_t appended = 0;
    uint64_t bytes = 0;
    uint64_t acked = 0;  // waiters[0] is entry `acked`
    uint64_t acked_bytes = 0;
    std::deque<Waiter> waiters;
    std::vector<uint64_t> replica_end;  // per ensemble member
    std::vector<std::string> replica_error;
    int senders_running = 0;
    std::vector<std::jthread> senders;
  };

  void StartSenders(Segment* seg) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SenderLoop(Segment* seg, size_t member);
  void AckerLoop();
  // The entries 2 members hold durably.
  static uint64_t QuorumEnd(const Segment& seg);
  // Seals `front` and creates `next` in one metadata Txn (acker thread, no lock held).
  absl::Status Roll(Segment* front, Segment* next);
  void Fail(absl::Status s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OK while this writer still owns the log; FENCED once another opened it; the metadata
  // store's error if it stays unreachable until `give_up`.
  absl::Status CheckOwner(absl::Time give_up);
  void PublishLocked(const Segment& seg) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Joins the senders of retired segments that finished.
  void ReapRetired(bool all);

  const QuorumOpenerOptions& options_;
  LogStorePool* const pool_;
  const std::string pchannel_;
  const Term term_;
  const bool read_only_;
  const uint64_t epoch_;
  metrics::Histogram* const flush_duration_ = nullptr;  // may be null
  std::unique_ptr<QuorumMeta> meta_;  // the acker thread's (writer) or the scanners' (reader)
  std::shared_ptr<LogView> view_;

  mutable absl::Mutex mu_;
  absl::CondVar work_cv_;  // senders: more to send, sealed, stopping
  absl::CondVar ack_cv_;   // acker: a member's end moved, an error, closing
  std::deque<std::unique_ptr<Segment>> segments_ ABSL_GUARDED_BY(mu_);  // oldest = acking
  std::vector<std::unique_ptr<Segment>> retired_ ABSL_GUARDED_BY(mu_);  // sealed, senders ending
  uint64_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);  // sticky
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // threads exit
  bool closed_ ABSL_GUARDED_BY(mu_) = false;

  absl::Mutex close_mu_;
  std::jthread acker_;
};

}  // namespace kf::wal::quorum
