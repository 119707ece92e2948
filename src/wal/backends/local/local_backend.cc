#include "wal/backends/local/local_backend.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/coding.h"
#include "common/crash_point.h"
#include "common/errors.h"
#include "common/metrics/histogram.h"
#include "common/status_macros.h"
#include "format/record_batch.h"
#include "wal/backends/local/disk_view.h"
#include "wal/backends/local/layout.h"
#include "wal/backends/local/local_scanner.h"

namespace kf::wal::local {

LocalBackend::LocalBackend(const LocalOpenerOptions& options, std::string pchannel, Term term,
                           std::shared_ptr<LogState> state)
    : options_(options),
      fs_(state->fs()),
      pchannel_(std::move(pchannel)),
      term_(term),
      read_only_(true),
      state_(std::move(state)) {}

LocalBackend::LocalBackend(const LocalOpenerOptions& options, std::string pchannel, Term term,
                           std::shared_ptr<LogState> state, WriterInit init,
                           std::shared_ptr<FenceSignal> fence, metrics::Histogram* flush_duration)
    : options_(options),
      fs_(state->fs()),
      pchannel_(std::move(pchannel)),
      term_(term),
      read_only_(false),
      state_(std::move(state)),
      fence_(std::move(fence)),
      flush_duration_(flush_duration) {
  active_ = std::move(init.active);
  active_segment_ = std::move(init.active_segment);
  {
    absl::MutexLock l(&mu_);
    next_id_ = init.next_offset;
  }
  zero_ahead_ = std::make_unique<ZeroAhead>(kZeroAheadBytes, options_.segment_bytes);
  // Named, so that top, perf and /proc attribute CPU and context switches to them.
  completer_ = std::jthread([this] {
    pthread_setname_np(pthread_self(), "kf-wal-done");
    CompletionLoop();
  });

  writer_ = std::jthread([this] {
    pthread_setname_np(pthread_self(), "kf-wal-write");
    WriterLoop();
  });
}

LocalBackend::~LocalBackend() { (void)Close(); }

absl::StatusOr<MessageId> LocalBackend::Append(std::string data, AppendCallback done) {
  return AppendEncoded([&data](const MessageId&, std::string* out) { out->append(data); },
                       std::move(done));
}

absl::StatusOr<MessageId> LocalBackend::AppendEncoded(
    absl::FunctionRef<void(const MessageId& id, std::string* out)> encode, AppendCallback done) {
  if (read_only_) return absl::FailedPreconditionError("local WAL: backend is read-only");
  absl::MutexLock l(&mu_);
  if (closing_) return absl::CancelledError("local WAL: backend closed");
  if (fence_->fenced.load(std::memory_order_acquire)) {
    return FencedError(absl::StrCat("local WAL ", pchannel_, ": term ", term_.value(),
                                    " was fenced by a newer owner"));
  }
  if (!error_.ok()) {
    if (IsFenced(error_)) return error_;
    return absl::FailedPreconditionError(
        absl::StrCat("local WAL ", pchannel_, ": earlier write error: ", error_.message()));
  }
  // The entry is encoded in place behind its length prefix; its size is known only then, so the
  // limits are checked after (and the bytes taken back), and a batch header that it turns out
  // to need is inserted in front of it.
  Queue& q = queue_;
  const bool first = q.batches.empty();
  if (first) {
    q.batches.push_back(Queue::Batch{0, next_id_, 0});
    q.bytes.resize(format::kBatchHeaderSize);
    format::PutBatchHeader(q.bytes.data(), next_id_);
  }
  size_t at = q.bytes.size();
  q.bytes.append(format::kEntryOverhead, '\0');
  const MessageId id = MessageId::Local(next_id_);
  encode(id, &q.bytes);
  const size_t size = q.bytes.size() - at - format::kEntryOverhead;
  absl::Status refused;
  if (size > options_.max_entry_bytes) {
    refused = StreamingError(
        StreamingCode::kInvalidArgument,
        absl::StrCat("entry of ", size, " bytes exceeds the limit of ", options_.max_entry_bytes));
  } else if (queue_bytes_ > 0 && queue_bytes_ + size > options_.max_queue_bytes) {
    refused = absl::ResourceExhaustedError(
        absl::StrCat("local WAL ", pchannel_, ": append queue full (", queue_bytes_, " bytes)"));
  }
  if (!refused.ok()) {
    if (first) {
      q.batches.clear();
      at = 0;
    }
    q.bytes.resize(at);
    return refused;
  }
  if (!first &&
      at - q.batches.back().start + format::kEntryOverhead + size > options_.max_batch_bytes) {
    q.bytes.insert(at, format::kBatchHeaderSize, '\0');
    format::PutBatchHeader(q.bytes.data() + at, next_id_);
    q.batches.push_back(Queue::Batch{at, next_id_, 0});
    at += format::kBatchHeaderSize;
  }
  EncodeFixed32(q.bytes.data() + at, static_cast<uint32_t>(size));
  ++q.batches.back().count;
  q.callbacks.push_back(std::move(done));
  q.data_bytes += size;
  queue_bytes_ += size;
  ++next_id_;
  if (q.callbacks.size() == 1 && appending_ == 0) work_cv_.Signal();
  return id;
}

std::atomic<bool> LocalBackend::someone_writing_here_{false};
std::atomic<const LocalBackend*> LocalBackend::last_offer_by_{nullptr};
std::atomic<int64_t> LocalBackend::last_offer_ns_{0};

void LocalBackend::BeginAppends() {
  absl::MutexLock l(&mu_);
  ++appending_;
}

void LocalBackend::EndAppends() {
  absl::MutexLock l(&mu_);
  --appending_;
  if (appending_ == 0 && !queue_.callbacks.empty()) work_cv_.Signal();
}

void LocalBackend::EndAppendsWritingHere() {
  absl::Status earlier;
  {
    absl::MutexLock l(&mu_);
    --appending_;
    if (appending_ > 0 || queue_.callbacks.empty()) return;
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    const LocalBackend* before = last_offer_by_.exchange(this, std::memory_order_relaxed);
    const int64_t before_ns = last_offer_ns_.exchange(now, std::memory_order_relaxed);
    const bool others_active =
        before != nullptr && before != this && now - before_ns < kOthersActiveNs;
    // Only a lone round trip's group: the queue is all this WAL has in flight (no group still
    // written or awaiting its callbacks, which also means the writer is idle; writer_busy_ is
    // what guards writing_). Otherwise the writer thread is the one to take it.
    const bool here = !others_active && !writer_busy_ && !closing_ &&
                      queue_bytes_ == queue_.data_bytes && queue_.data_bytes <= kWriteHereBytes &&
                      !someone_writing_here_.exchange(true, std::memory_order_acquire);
    if (!here) {
      work_cv_.Signal();
      return;
    }
    earlier = TakeGroup();
  }
  WriteTakenGroup(std::move(earlier));
  someone_writing_here_.store(false, std::memory_order_release);
}

absl::Status LocalBackend::TakeGroup() {
  std::swap(writing_, queue_);
  queue_.callbacks.swap(spare_callbacks_);
  writer_busy_ = true;
  return error_;
}

void LocalBackend::ReserveFor(uint64_t end) {
  if (end <= reserved_) return;
  reserved_ = std::max(end, std::min(end + kReserveStep, options_.segment_bytes));
  // Best effort: without a reservation appends still work, each fdatasync then also commits
  // the file's new size.
  (void)active_->Preallocate(reserved_);
}

void LocalBackend::WriterLoop() {
  for (;;) {
    absl::Status earlier;
    {
      absl::MutexLock l(&mu_);
      // An appender writing a group itself (EndAppendsWritingHere) has the writer busy.
      while (writer_busy_ || (queue_.callbacks.empty() && !closing_)) work_cv_.Wait(&mu_);
      if (queue_.callbacks.empty()) break;  // closing and drained
      earlier = TakeGroup();
    }
    WriteTakenGroup(std::move(earlier));
  }
  absl::MutexLock l(&done_mu_);
  writer_done_ = true;
}

void LocalBackend::WriteTakenGroup(absl::Status earlier) {
  Completion c;
  c.bytes = writing_.data_bytes;
  if (!earlier.ok()) {
    // A previous group failed: nothing after it reaches the file.
    c.status = IsFenced(earlier)
                   ? earlier
                   : absl::FailedPreconditionError(absl::StrCat(
                         "local WAL ", pchannel_, ": earlier write error: ", earlier.message()));
  } else {
    c.status = WriteAndSync(writing_, &c);
    if (!c.status.ok()) {
      c.status = absl::Status(
          c.status.code(),
          absl::StrCat("local WAL ", pchannel_, ": write failed: ", c.status.message()));
      absl::MutexLock l(&mu_);
      error_ = c.status;  // sticky: the groups queued meanwhile fail on the next rounds
    }
  }
  c.callbacks.swap(writing_.callbacks);  // writing_ gets c's, empty
  writing_.batches.clear();
  writing_.data_bytes = 0;
  if (writing_.bytes.capacity() > kMaxKeptQueueBytes) {
    std::string().swap(writing_.bytes);
  } else {
    writing_.bytes.clear();
  }
  Complete(std::move(c));
  absl::MutexLock l(&mu_);
  writer_busy_ = false;
  // Appends queued meanwhile (unless a hold will) and Close found the writer busy: whoever
  // wrote this group wakes the writer thread for them (which itself just goes round).
  if ((appending_ == 0 && !queue_.callbacks.empty()) || closing_) work_cv_.Signal();
}

absl::Status LocalBackend::WriteAndSync(Queue& group, Completion* c) {
  const auto start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(WriteGroup(group, &c->written));
  RETURN_IF_ERROR(active_->Sync());
  metrics::ObserveSecondsSince(flush_duration_, start);
  c->new_segments.swap(new_segments_);
  return absl::OkStatus();
}

void LocalBackend::Complete(Completion c) {
  // A large group inline only when no group waits for the writer (it would delay no write).
  const bool small_or_idle = c.callbacks.size() <= kInlineCompletions || [this] {
    absl::MutexLock l(&mu_);
    return queue_.callbacks.empty();
  }();
  {
    absl::MutexLock l(&done_mu_);
    // Inline only when nothing is queued or running ahead of this group: completions keep id
    // order.
    if (!small_or_idle || !completions_.empty() || completer_busy_) {
      completions_.push_back(std::move(c));
      return;
    }
  }
  Finish(c);
}

void LocalBackend::Finish(Completion& c) {
  if (c.status.ok()) {
    // Only after the group's sync: a fence written before its data hit the disk must win.
    c.status = CheckFence();
    if (c.status.ok()) {
      Publish(c.written, c.new_segments);
    } else {
      if (!IsFenced(c.status)) {
        c.status = absl::Status(
            c.status.code(),
            absl::StrCat("local WAL ", pchannel_, ": fence check failed: ", c.status.message()));
      }
      absl::MutexLock l(&mu_);
      if (error_.ok()) error_ = c.status;  // sticky, like a write error
    }
  }
  for (auto& done : c.callbacks) {
    if (done) std::move(done)(c.status);
  }
  c.callbacks.clear();
  absl::MutexLock l(&mu_);
  queue_bytes_ -= c.bytes;
  if (c.callbacks.capacity() > spare_callbacks_.capacity() &&
      c.callbacks.capacity() <= kMaxSpareEntries) {
    spare_callbacks_.swap(c.callbacks);
  }
}

void LocalBackend::CompletionLoop() {
  for (;;) {
    Completion c;
    {
      absl::MutexLock l(&done_mu_);
      done_mu_.Await(absl::Condition(
          +[](LocalBackend* b) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return !b->completions_.empty() || b->writer_done_;
          },
          this));
      if (completions_.empty()) return;
      c = std::move(completions_.front());
      completions_.pop_front();
      completer_busy_ = true;
    }
    Finish(c);
    absl::MutexLock l(&done_mu_);
    completer_busy_ = false;
  }
}

absl::Status LocalBackend::WriteGroup(Queue& group, std::vector<Written>* written) {
  uint64_t pos = active_->Size();
  for (size_t i = 0; i < group.batches.size(); ++i) {
    const Queue::Batch& batch = group.batches[i];
    if (i > 0) {
      // Each batch is durable before the next is written: the pages of one unsynced write
      // into a preallocated segment may reach the disk in any order, and recovery must be
      // able to take a valid batch after an invalid one as proof of damage
      // (docs/local-wal-format.md). Only groups beyond max_batch_bytes pay for it.
      RETURN_IF_ERROR(active_->Sync());
    }
    if (pos > 0 && pos >= options_.segment_bytes) {
      // The old segment must be durable and cut to its data before the new one holds
      // anything, so recovery never sees a torn or zero-padded segment that is not the last.
      zero_ahead_->Detach();
      RETURN_IF_ERROR(active_->Truncate(pos));
      RETURN_IF_ERROR(active_->Sync());
      RETURN_IF_ERROR(Roll(batch.base));
      pos = 0;
    }
    const size_t end =
        i + 1 < group.batches.size() ? group.batches[i + 1].start : group.bytes.size();
    char* bytes = group.bytes.data() + batch.start;
    const size_t size = end - batch.start;
    format::SealBatch(bytes, size, batch.count);
    ReserveFor(pos + size);
    zero_ahead_->BeforeWrite(active_, pos + size, group.bytes.size());
    RETURN_IF_ERROR(active_->Append(std::string_view(bytes, size)));
    written->push_back(Written{active_segment_.get(), pos, size, batch.base, batch.count});
    pos += size;
  }
  return absl::OkStatus();
}

absl::Status LocalBackend::Roll(uint64_t base) {
  const std::string name = SegmentFileName(base, term_);
  const std::string path = fs::JoinPath(state_->dir(), name);
  ASSIGN_OR_RETURN(auto file, fs_->OpenWritable(path, fs::OpenMode::kCreateExclusive));
  RETURN_IF_ERROR(fs_->SyncDir(state_->dir()));
  active_ = std::move(file);
  active_segment_ = std::make_shared<Segment>(name, path, base, term_);
  new_segments_.push_back(active_segment_);
  reserved_ = 0;
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Term>> LocalBackend::FenceTermOnDisk() {
  absl::MutexLock l(&fence_mu_);
  if (fence_dir_ == nullptr) {
    auto dir = fs_->OpenDirectoryLister(fs::JoinPath(state_->dir(), kFenceDir));
    if (absl::IsNotFound(dir.status())) return std::optional<Term>();  // no fence yet
    if (!dir.ok()) return dir.status();
    fence_dir_ = *std::move(dir);
  }
  if (fence_dir_->Unchanged()) return fence_on_disk_;
  absl::StatusOr<std::vector<std::string>> names = fence_dir_->List();
  if (absl::IsNotFound(names.status())) {  // the directory held was removed: by path again
    fence_dir_.reset();
    return ReadFenceTerm(fs_, state_->dir());
  }
  if (!names.ok()) return names.status();
  fence_on_disk_ = HighestFenceTerm(*names);
  return fence_on_disk_;
}

absl::Status LocalBackend::CheckFence() {
  if (fence_->fenced.load(std::memory_order_acquire)) {
    return FencedError(absl::StrCat("local WAL ", pchannel_, ": term ", term_.value(),
                                    " was fenced by a newer owner"));
  }
  ASSIGN_OR_RETURN(std::optional<Term> fence, FenceTermOnDisk());
  if (fence && *fence > term_) {
    fence_->fenced.store(true, std::memory_order_release);
    return FencedError(absl::StrCat("local WAL ", pchannel_, ": term ", term_.value(),
                                    " was fenced by term ", fence->value()));
  }
  return absl::OkStatus();
}

void LocalBackend::Publish(const std::vector<Written>& written,
                           std::vector<std::shared_ptr<Segment>>& new_segments) {
  absl::MutexLock l(&state_->mu);
  for (const auto& w : written) {
    Segment* seg = w.segment;
    seg->limit = w.pos + w.size;
    MaybeAddIndexPoint(&seg->index, {w.base, w.pos});
    seg->indexed_pos = seg->limit;
    seg->indexed_offset = w.base + w.count;
  }
  for (auto& seg : new_segments) state_->segments.push_back(std::move(seg));
  new_segments.clear();
  ++state_->version;
  state_->cv.SignalAll();
}

absl::StatusOr<std::unique_ptr<BackendScanner>> LocalBackend::Read(const ReadOptions& options) {
  if (read_only_) RETURN_IF_ERROR(state_->RefreshFromDisk());
  uint64_t start = 0;
  switch (options.start) {
    case ReadOptions::Start::kEarliest: {
      absl::MutexLock l(&state_->mu);
      if (!state_->segments.empty()) start = state_->segments.front()->base;
      break;
    }
    case ReadOptions::Start::kLatest:
      start = NextId().entry();
      break;
    case ReadOptions::Start::kFrom:
    case ReadOptions::Start::kAfter:
      if (options.id.kind() != WalKind::kLocal) {
        return StreamingError(StreamingCode::kInvalidArgument,
                              "local WAL: message id is not a local id: " + options.id.ToText());
      }
      start = options.id.entry() + (options.start == ReadOptions::Start::kAfter ? 1 : 0);
      break;
  }
  ASSIGN_OR_RETURN(auto scanner, LocalScanner::Create(state_, start));
  return std::unique_ptr<BackendScanner>(std::move(scanner));
}

MessageId LocalBackend::NextId() const {
  if (!read_only_) {
    absl::MutexLock l(&mu_);
    return MessageId::Local(next_id_);
  }
  // Read-only: the end of what is readable now.
  std::shared_ptr<Segment> last;
  {
    absl::MutexLock l(&state_->mu);
    if (state_->segments.empty()) return MessageId::Local(0);
    last = state_->segments.back();
  }
  auto end = state_->EnsureIndex(last.get());
  return MessageId::Local(end.ok() ? *end : last->base);
}

absl::StatusOr<MessageId> LocalBackend::TailStart(uint64_t bytes) {
  if (read_only_) RETURN_IF_ERROR(state_->RefreshFromDisk());
  absl::MutexLock l(&state_->mu);
  if (state_->segments.empty()) return MessageId::Local(0);
  uint64_t remaining = bytes;
  for (auto it = state_->segments.rbegin(); it != state_->segments.rend(); ++it) {
    const Segment& seg = **it;
    if (seg.limit >= remaining) {
      const uint64_t target = seg.limit - remaining;
      uint64_t best = seg.base;
      for (const auto& p : seg.index) {
        if (p.pos > target) break;
        best = p.offset;
      }
      return MessageId::Local(best);
    }
    remaining -= seg.limit;
  }
  return MessageId::Local(state_->segments.front()->base);
}

absl::Status LocalBackend::Truncate(const MessageId& id) {
  if (read_only_) return absl::FailedPreconditionError("local WAL: backend is read-only");
  // A fenced owner must not reclaim what its successor may still read from.
  RETURN_IF_ERROR(CheckFence());
  if (id.kind() != WalKind::kLocal) {
    return StreamingError(StreamingCode::kInvalidArgument,
                          "local WAL: message id is not a local id: " + id.ToText());
  }
  std::vector<std::shared_ptr<Segment>> victims;
  {
    absl::MutexLock l(&state_->mu);
    auto& segs = state_->segments;
    // A segment goes once every entry in it is <= id, i.e. the next one starts at <= id + 1.
    // The last (active) segment always stays.
    size_t n = 0;
    while (n + 1 < segs.size() && segs[n + 1]->base <= id.entry() + 1) ++n;
    victims.assign(segs.begin(), segs.begin() + static_cast<ptrdiff_t>(n));
    segs.erase(segs.begin(), segs.begin() + static_cast<ptrdiff_t>(n));
    if (n > 0) {
      ++state_->version;
      state_->cv.SignalAll();
    }
  }
  // Oldest first, so a crash in between leaves a prefix removed, never a hole.
  for (const auto& seg : victims) {
    absl::Status s = fs_->RemoveFile(seg->path);
    if (!s.ok() && !absl::IsNotFound(s)) return s;
    CrashPoint("wal.segment_truncated");
  }
  if (!victims.empty()) RETURN_IF_ERROR(fs_->SyncDir(state_->dir()));
  return absl::OkStatus();
}

std::optional<uint64_t> LocalBackend::StoredBytes() const {
  absl::MutexLock l(&state_->mu);
  uint64_t total = 0;
  for (const auto& seg : state_->segments) total += seg->limit;
  return total;
}

absl::Status LocalBackend::Close() {
  // A closed log is not active: its last offer must not keep another from writing here.
  const LocalBackend* self = this;
  last_offer_by_.compare_exchange_strong(self, nullptr, std::memory_order_relaxed);
  absl::MutexLock cl(&close_mu_);
  {
    absl::MutexLock l(&mu_);
    if (closed_) return absl::OkStatus();
    closing_ = true;
    work_cv_.Signal();
  }
  if (writer_.joinable()) writer_.join();
  if (completer_.joinable()) completer_.join();  // every callback has run after this
  absl::Status s;
  if (active_ != nullptr) {
    zero_ahead_->Detach();
    // Give back the unused reservation and zeros (recovery would cut them too); best effort.
    bool healthy;
    {
      absl::MutexLock l(&mu_);
      healthy = error_.ok();
    }
    if (healthy) (void)active_->Truncate(active_->Size());
    s = active_->Close();
    active_.reset();
  }
  if (fence_ != nullptr) fence_->closed.store(true, std::memory_order_release);
  {
    absl::MutexLock l(&state_->mu);
    state_->closed = true;
    state_->cv.SignalAll();
  }
  absl::MutexLock l(&mu_);
  closed_ = true;
  return s;
}

}  // namespace kf::wal::local
