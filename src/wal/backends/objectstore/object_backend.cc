#include "wal/backends/objectstore/object_backend.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/backoff.h"
#include "common/errors.h"
#include "common/metrics/histogram.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"
#include "wal/backends/objectstore/compactor.h"
#include "wal/backends/objectstore/object_scanner.h"

namespace kf::wal::objectstore {

ObjectBackend::ObjectBackend(const ObjectOpenerOptions& options, Term term,
                             std::shared_ptr<LogView> view)
    : options_(options), term_(term), read_only_(true), view_(std::move(view)) {
  closed_ = true;
}

ObjectBackend::ObjectBackend(const ObjectOpenerOptions& options, Term term,
                             std::shared_ptr<LogView> view, VersionedMeta meta,
                             metrics::Histogram* flush_duration)
    : options_(options),
      term_(term),
      read_only_(false),
      view_(std::move(view)),
      flush_duration_(flush_duration),
      generation_(meta.meta.generation()) {
  const auto& open = meta.meta.segments(meta.meta.segments_size() - 1);
  segment_ = ready_segment_ = open.id();
  segment_created_ = absl::FromUnixMicros(open.created_unix_micros());
  next_segment_ = meta.meta.next_segment();
  meta_ = std::move(meta);
  for (int i = 0; i < options_.max_parallel_uploads; ++i) {
    uploaders_.emplace_back([this] { UploadLoop(); });
  }
  completer_ = std::jthread([this] { CompletionLoop(); });
  compactor_ = std::jthread([this] { CompactorLoop(); });
}

ObjectBackend::~ObjectBackend() { (void)Close(); }

absl::Time ObjectBackend::RequestDeadline(absl::Time limit) const {
  return std::min(limit, absl::Now() + options_.request_timeout);
}

absl::StatusOr<MessageId> ObjectBackend::Append(std::string data, AppendCallback done) {
  absl::MutexLock l(&mu_);
  // Whatever the outcome: NextId()'s pin ends here. An uploader that started waiting while it
  // held (its deadline the pin's end, up to kNextIdPin away) must look again now, or the open
  // block would sit unflushed — and its appends unacknowledged — until then.
  pinned_until_ = absl::InfinitePast();
  if (pin_waiters_ > 0) work_cv_.SignalAll();
  if (read_only_) return absl::FailedPreconditionError("objectstore WAL: read-only backend");
  if (closing_) return absl::CancelledError("objectstore WAL: backend closed");
  if (!error_.ok()) {
    if (IsFenced(error_)) return error_;
    return absl::FailedPreconditionError(absl::StrCat(
        "objectstore WAL ", view_->layout().pchannel(), " failed earlier: ", error_.message()));
  }
  if (data.size() > options_.max_entry_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("objectstore WAL: entry of ", data.size(),
                                                   " bytes exceeds the limit of ",
                                                   options_.max_entry_bytes));
  }
  if (queue_bytes_ + data.size() > options_.max_queue_bytes) {
    return absl::ResourceExhaustedError("objectstore WAL: append queue full");
  }
  // The entry always goes into the open block, which closes once full: so NextId() can tell
  // exactly which id the next Append gets.
  if (open_ == nullptr) {
    open_ = std::make_shared<Block>();
    open_->segment = segment_;
    open_->index = next_block_++;
    open_->opened = absl::Now();
    open_->builder.Begin(term_, open_->segment, open_->index);
    work_cv_.Signal();  // an idle uploader takes it at once, or times the flush delay
  }
  const uint64_t entry = EntryOf(open_->index, open_->builder.count());
  open_->builder.Add(data);
  open_->callbacks.push_back(std::move(done));
  open_->queued_bytes += data.size();
  queue_bytes_ += data.size();
  const uint64_t segment = open_->segment;
  if (open_->builder.size() >= options_.max_block_bytes ||
      open_->builder.count() >= kMaxEntriesPerBlock) {
    CloseOpenBlock();
  }
  return IdOf(segment, entry);
}

void ObjectBackend::CloseOpenBlock() {
  BlockPtr b = std::move(open_);
  b->builder.Finish();
  segment_bytes_ += b->builder.size();
  queue_.push_back(b);
  pending_.push_back(b);
  // Later blocks go to a new segment once this one is big or old enough.
  if (segment_bytes_ >= options_.segment_bytes ||
      absl::Now() - segment_created_ >= options_.segment_age) {
    segment_ = next_segment_++;
    next_block_ = 0;
    segment_bytes_ = 0;
    segment_created_ = absl::Now();
  }
  work_cv_.Signal();
}

ObjectBackend::BlockPtr ObjectBackend::TakeBlock(bool just_finished, bool* roll) {
  for (;;) {
    if (!error_.ok() && open_ != nullptr) CloseOpenBlock();  // its entries fail with the rest
    if (!queue_.empty()) {
      BlockPtr front = queue_.front();
      if (!error_.ok() || front->segment <= ready_segment_) {
        queue_.pop_front();
        *roll = false;
        return front;
      }
      // The first block of a new segment: once everything before it completed, its uploader
      // rolls the segment; until then nothing of the new segment goes up.
      if (!rolling_ && !completing_ && pending_.front() == front) {
        queue_.pop_front();
        rolling_ = true;
        *roll = true;
        return front;
      }
    } else if (open_ != nullptr && (closing_ || absl::Now() >= pinned_until_) &&
               (uploading_ == 0 || just_finished || closing_ ||
                absl::Now() - open_->opened >= options_.flush_delay)) {
      CloseOpenBlock();
      continue;
    } else if (closing_ && open_ == nullptr) {
      return nullptr;
    }
    if (open_ != nullptr && queue_.empty()) {
      const absl::Time flush_at = open_->opened + options_.flush_delay;
      const bool pinned = pinned_until_ > flush_at;
      pin_waiters_ += pinned ? 1 : 0;
      work_cv_.WaitWithDeadline(&mu_, std::max(flush_at, pinned_until_));
      pin_waiters_ -= pinned ? 1 : 0;
    } else {
      work_cv_.Wait(&mu_);
    }
  }
}

void ObjectBackend::UploadLoop() {
  absl::MutexLock l(&mu_);
  for (bool just_finished = false;; just_finished = true) {
    bool roll = false;
    BlockPtr b = TakeBlock(just_finished, &roll);
    if (b == nullptr) return;
    absl::Status s = error_;
    if (s.ok()) {
      ++uploading_;
      mu_.Unlock();
      if (roll) s = Roll(b->segment);
      if (s.ok()) {
        const auto start = std::chrono::steady_clock::now();
        s = Upload(*b);
        if (s.ok()) metrics::ObserveSecondsSince(flush_duration_, start);
      }
      mu_.Lock();
      --uploading_;
    }
    if (roll) {
      rolling_ = false;
      if (s.ok()) ready_segment_ = b->segment;
    }
    if (!s.ok() && error_.ok()) error_ = s;
    b->done = true;
    b->status = std::move(s);
    work_cv_.SignalAll();
  }
}

absl::Status ObjectBackend::Upload(Block& block) {
  const std::string key = view_->layout().BlockKey(block.segment, block.index);
  const std::string& data = block.builder.bytes();
  const absl::Time give_up = absl::Now() + options_.upload_timeout;
  Backoff backoff(absl::Milliseconds(20), absl::Seconds(2));
  for (int attempt = 1;; ++attempt) {
    auto put = options_.store->Put(key, data, object::PutOptions{.if_absent = true},
                                   RequestDeadline(give_up));
    absl::Status s = put.status();
    if (absl::IsAlreadyExists(s)) {
      // Ours from an earlier attempt whose answer was lost, or a newer writer's fence.
      auto got = options_.store->Get(key, object::ByteRange::All(), RequestDeadline(give_up));
      if (got.ok() && *got == data) return absl::OkStatus();
      if (got.ok()) {
        return FencedError(absl::StrCat("objectstore WAL ", view_->layout().pchannel(), ": block ",
                                        key, " was fenced by a newer writer"));
      }
      s = got.status();
    }
    if (s.ok() || absl::IsInvalidArgument(s)) return s;
    const absl::Duration wait = backoff.Next();
    if (absl::Now() + wait >= give_up) {
      return absl::UnavailableError(absl::StrCat("objectstore WAL ", view_->layout().pchannel(),
                                                 ": block ", key, " not stored after ", attempt,
                                                 " attempts: ", s.message()));
    }
    spdlog::warn("objectstore WAL {}: storing block {} failed (attempt {}), retrying in {}: {}",
                 pchannel(), key, attempt, absl::FormatDuration(wait), s.ToString());
    absl::MutexLock l(&mu_);
    auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !error_.ok(); };
    mu_.AwaitWithTimeout(absl::Condition(&stop), wait);
    if (!error_.ok()) return error_;
  }
}

absl::Status ObjectBackend::Roll(uint64_t segment) {
  SegmentView sealed;
  {
    absl::MutexLock l(&view_->mu);
    sealed = view_->segments.back();
  }
  absl::MutexLock l(&meta_mu_);
  RETURN_IF_ERROR(UpdateMeta([&](kingfisher::v1::ObjectLogMeta* m) {
    auto* last = m->mutable_segments(m->segments_size() - 1);
    last->set_sealed(true);
    last->set_blocks(sealed.blocks);
    last->set_end_entry(sealed.end_entry);
    last->set_bytes(sealed.bytes);
    auto* open = m->add_segments();
    open->set_id(segment);
    open->set_term(term_.value());
    open->set_created_unix_micros(absl::ToUnixMicros(absl::Now()));
    m->set_next_segment(segment + 1);
  }));
  {
    absl::MutexLock v(&view_->mu);
    view_->segments.back().sealed = true;
    view_->segments.push_back(SegmentView{.id = segment});
    view_->Changed();
  }
  if (options_.compact_below_bytes > 0 && sealed.blocks >= 2 &&
      sealed.bytes / sealed.blocks < options_.compact_below_bytes) {
    absl::MutexLock m(&mu_);
    compact_queue_.push_back(sealed.id);
  }
  return absl::OkStatus();
}

absl::Status ObjectBackend::DeleteSegmentObjects(uint64_t segment, absl::Time deadline) {
  const std::string prefix = view_->layout().SegmentPrefix(segment);
  for (;;) {
    auto page = RetryUnavailable(deadline, [&] {
      return options_.store->List(prefix, "", 1000, RequestDeadline(deadline));
    });
    if (!page.ok()) return page.status();
    for (const auto& o : page->objects) {
      RETURN_IF_ERROR(RetryUnavailable(
          deadline, [&] { return options_.store->Delete(o.key, RequestDeadline(deadline)); }));
    }
    if (!page->truncated) return absl::OkStatus();
  }
}

void ObjectBackend::CollectGarbage() {
  uint64_t below;
  {
    absl::MutexLock l(&view_->mu);
    below = view_->truncated_segments;
  }
  const absl::Time deadline = absl::Now() + options_.upload_timeout;
  for (;;) {
    auto first =
        options_.store->List(view_->layout().log_prefix(), "", 1, RequestDeadline(deadline));
    if (!first.ok() || first->objects.empty()) return;
    const auto segment = view_->layout().SegmentOfKey(first->objects[0].key);
    if (!segment || *segment >= below) return;
    if (absl::Status s = DeleteSegmentObjects(*segment, deadline); !s.ok()) {
      spdlog::warn("objectstore WAL {}: deleting truncated segment {} failed: {}", pchannel(),
                   *segment, s.ToString());
      return;
    }
    spdlog::info("objectstore WAL {}: deleted the objects of truncated segment {}", pchannel(),
                 *segment);
  }
}

void ObjectBackend::CompactorLoop() {
  CollectGarbage();
  for (;;) {
    uint64_t segment;
    {
      absl::MutexLock l(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return closing_ || !compact_queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (closing_) return;
      segment = compact_queue_.front();
      compact_queue_.pop_front();
    }
    Compact(segment);
  }
}

void ObjectBackend::Compact(uint64_t segment) {
  std::vector<uint64_t> sizes;
  {
    absl::MutexLock l(&view_->mu);
    const size_t i = view_->FindSegment(segment);
    if (i == view_->segments.size() || view_->segments[i].id != segment) return;  // truncated
    sizes = view_->segments[i].block_bytes;
  }
  const std::vector<MergedRun> runs = PlanCompaction(sizes, options_.merged_object_bytes);
  if (runs.empty()) return;
  const absl::Time deadline = absl::Now() + options_.upload_timeout;
  auto fail = [&](const absl::Status& s) {
    spdlog::warn("objectstore WAL {}: compaction of segment {} skipped: {}", pchannel(), segment,
                 s.ToString());
  };
  for (const MergedRun& run : runs) {
    if (absl::Status s = WriteMerged(view_.get(), segment, run, deadline); !s.ok()) {
      return fail(s);
    }
  }
  bool present = false;
  {
    absl::MutexLock l(&meta_mu_);
    absl::Status s = UpdateMeta([&](kingfisher::v1::ObjectLogMeta* m) {
      for (auto& seg : *m->mutable_segments()) {
        if (seg.id() != segment) continue;
        present = true;
        seg.clear_merged();
        for (const MergedRun& r : runs) {
          auto* merged = seg.add_merged();
          merged->set_first_block(r.first);
          merged->set_end_block(r.end);
        }
      }
    });
    if (!s.ok()) return fail(s);
  }
  if (!present) return;  // truncated meanwhile: the truncation deletes the whole prefix
  {
    absl::MutexLock l(&view_->mu);
    const size_t i = view_->FindSegment(segment);
    if (i < view_->segments.size() && view_->segments[i].id == segment) {
      view_->segments[i].merged = runs;
      view_->Changed();
    }
  }
  // Readers that still go for a block find it missing, look again and read the merged object.
  for (const MergedRun& run : runs) {
    for (uint64_t b = run.first; b < run.end; ++b) {
      const std::string key = view_->layout().BlockKey(segment, b);
      absl::Status s = RetryUnavailable(
          deadline, [&] { return options_.store->Delete(key, RequestDeadline(deadline)); });
      if (!s.ok()) return fail(s);
    }
  }
}

absl::Status ObjectBackend::UpdateMeta(
    const std::function<void(kingfisher::v1::ObjectLogMeta*)>& change) {
  const absl::Time give_up = absl::Now() + options_.upload_timeout;
  for (;;) {
    kingfisher::v1::ObjectLogMeta next = meta_.meta;
    change(&next);
    const auto revision = meta_.mod_revision;
    auto cas = RetryUnavailable(give_up, [&] {
      return CasMeta(options_.meta, view_->layout().meta_key(), revision, next,
                     RequestDeadline(give_up));
    });
    if (!cas.ok()) return cas.status();
    if (cas->has_value()) {
      meta_ = **cas;
      return absl::OkStatus();
    }
    auto reloaded = RetryUnavailable(give_up, [&] {
      return LoadMeta(options_.meta, view_->layout().meta_key(), RequestDeadline(give_up));
    });
    if (!reloaded.ok()) return reloaded.status();
    if (reloaded->meta.generation() != generation_) {
      return FencedError(absl::StrCat("objectstore WAL ", view_->layout().pchannel(),
                                      ": opened by term ", reloaded->meta.term(), " after term ",
                                      term_.value()));
    }
    meta_ = *std::move(reloaded);
  }
}

absl::Status ObjectBackend::CheckGeneration() {
  const absl::Time give_up = absl::Now() + options_.upload_timeout;
  auto current = RetryUnavailable(give_up, [&] {
    return LoadMeta(options_.meta, view_->layout().meta_key(), RequestDeadline(give_up));
  });
  if (!current.ok()) return current.status();
  if (current->meta.generation() == generation_) return absl::OkStatus();
  return FencedError(absl::StrCat("objectstore WAL ", view_->layout().pchannel(),
                                  ": opened by term ", current->meta.term(), " after term ",
                                  term_.value()));
}

void ObjectBackend::Publish(const std::vector<BlockPtr>& blocks) {
  absl::MutexLock l(&view_->mu);
  for (const BlockPtr& b : blocks) {
    SegmentView& seg = view_->segments[view_->FindSegment(b->segment)];
    const uint64_t size = b->builder.size();
    seg.blocks = b->index + 1;
    seg.end_entry = EntryOf(b->index, b->builder.count());
    seg.bytes += size;
    seg.block_bytes.push_back(size);
    view_->CacheBlock(b->segment, b->index,
                      std::make_shared<const std::string>(std::move(b->builder.bytes())));
  }
  view_->Changed();
}

void ObjectBackend::CompletionLoop() {
  absl::Status sticky;  // once a block failed, every later one fails with it
  for (;;) {
    std::vector<BlockPtr> group;
    absl::Status failed;
    {
      absl::MutexLock l(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return (!pending_.empty() && pending_.front()->done) ||
               (closing_ && pending_.empty() && open_ == nullptr);
      };
      mu_.Await(absl::Condition(&ready));
      if (pending_.empty()) return;
      while (!pending_.empty() && pending_.front()->done) {
        group.push_back(std::move(pending_.front()));
        pending_.pop_front();
      }
      completing_ = true;
    }
    // The stored prefix of the group is acknowledged unless a newer writer opened the log.
    size_t stored = 0;
    while (sticky.ok() && stored < group.size() && group[stored]->status.ok()) ++stored;
    if (stored > 0) {
      if (absl::Status s = CheckGeneration(); !s.ok()) {
        stored = 0;
        for (auto& b : group) b->status = s;
        absl::MutexLock l(&mu_);
        if (error_.ok()) error_ = s;
        work_cv_.SignalAll();
      }
    }
    if (stored > 0) Publish({group.begin(), group.begin() + static_cast<ptrdiff_t>(stored)});
    uint64_t bytes = 0;
    for (size_t i = 0; i < group.size(); ++i) {
      if (i >= stored && sticky.ok()) sticky = group[i]->status;
      for (auto& cb : group[i]->callbacks) std::move(cb)(i < stored ? absl::OkStatus() : sticky);
      bytes += group[i]->queued_bytes;
    }
    absl::MutexLock l(&mu_);
    queue_bytes_ -= bytes;
    completing_ = false;
    work_cv_.SignalAll();  // a segment roll may wait for this group
  }
}

absl::Status ObjectBackend::Close() {
  absl::MutexLock c(&close_mu_);
  {
    absl::MutexLock l(&mu_);
    if (closing_ || read_only_) {
      closing_ = true;
    } else {
      closing_ = true;
      work_cv_.SignalAll();
    }
  }
  completer_ = std::jthread();  // joins: every block completed
  compactor_ = std::jthread();
  uploaders_.clear();
  absl::MutexLock v(&view_->mu);
  if (!view_->closed) {
    view_->closed = true;
    view_->Changed();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BackendScanner>> ObjectBackend::Read(const ReadOptions& options) {
  uint64_t segment = 0, entry = 0;
  switch (options.start) {
    case ReadOptions::Start::kEarliest: {
      absl::MutexLock l(&view_->mu);
      segment = view_->truncated_segments;
      break;
    }
    case ReadOptions::Start::kLatest: {
      MessageId next;
      if (read_only_) {
        next = NextId();
      } else {
        absl::MutexLock l(&mu_);
        next = NextIdLocked();
      }
      segment = next.segment();
      entry = next.entry();
      break;
    }
    case ReadOptions::Start::kFrom:
    case ReadOptions::Start::kAfter:
      if (options.id.kind() != WalKind::kObjectStore) {
        return absl::InvalidArgumentError(
            absl::StrCat("objectstore WAL: cannot read from id ", options.id.ToText()));
      }
      segment = options.id.segment();
      entry = options.id.entry() + (options.start == ReadOptions::Start::kAfter ? 1 : 0);
      break;
  }
  return std::unique_ptr<BackendScanner>(std::make_unique<ObjectScanner>(view_, segment, entry));
}

MessageId ObjectBackend::NextId() const {
  if (!read_only_) {
    absl::MutexLock l(&mu_);
    // The adaptor calls Append right after: until then the open block stays open, so the id
    // told here is the one Append assigns. The pin ends with the next Append; the lapse only
    // bounds the delay a caller that never appends would cause.
    pinned_until_ = absl::Now() + kNextIdPin;
    return NextIdLocked();
  }
  absl::MutexLock l(&view_->mu);
  if (view_->segments.empty()) return IdOf(view_->truncated_segments, 0);
  const SegmentView& last = view_->segments.back();
  return IdOf(last.id, last.sealed ? last.end_entry : EntryOf(last.blocks, 0));
}

MessageId ObjectBackend::NextIdLocked() const {
  if (open_ != nullptr) return IdOf(open_->segment, EntryOf(open_->index, open_->builder.count()));
  return IdOf(segment_, EntryOf(next_block_, 0));
}

absl::StatusOr<MessageId> ObjectBackend::TailStart(uint64_t bytes) {
  absl::MutexLock l(&view_->mu);
  uint64_t covered = 0;
  for (size_t i = view_->segments.size(); i-- > 0;) {
    const SegmentView& seg = view_->segments[i];
    if (seg.block_bytes.size() == seg.blocks) {
      for (uint64_t b = seg.blocks; b-- > 0;) {
        covered += seg.block_bytes[b];
        if (covered >= bytes) return IdOf(seg.id, EntryOf(b, 0));
      }
    } else {
      // Block sizes unknown (a segment sealed before this open): its start covers it whole.
      covered += seg.bytes;
      if (covered >= bytes) return IdOf(seg.id, 0);
    }
  }
  return IdOf(view_->segments.empty() ? view_->truncated_segments : view_->segments.front().id, 0);
}

absl::Status ObjectBackend::Truncate(const MessageId& id) {
  if (read_only_) return absl::FailedPreconditionError("objectstore WAL: read-only backend");
  if (id.kind() != WalKind::kObjectStore) {
    return absl::InvalidArgumentError(
        absl::StrCat("objectstore WAL: cannot truncate at id ", id.ToText()));
  }
  std::vector<uint64_t> removed;
  kingfisher::v1::TruncatedEnd end;  // of the newest removed
  {
    absl::MutexLock l(&meta_mu_);
    RETURN_IF_ERROR(UpdateMeta([&](kingfisher::v1::ObjectLogMeta* m) {
      removed.clear();
      int keep = 0;
      // Whole sealed segments whose every entry is at or below `id`; never the open one.
      while (keep + 1 < m->segments_size()) {
        const auto& s = m->segments(keep);
        if (!s.sealed() || s.id() > id.segment() ||
            (s.id() == id.segment() && s.end_entry() > id.entry() + 1)) {
          break;
        }
        removed.push_back(s.id());
        end.set_segment(s.id());
        end.set_end_entry(s.end_entry());
        ++keep;
      }
      m->mutable_segments()->DeleteSubrange(0, keep);
      if (!removed.empty()) {
        m->set_truncated_segments(removed.back() + 1);
        *m->mutable_truncated_end() = end;
      }
    }));
  }
  if (removed.empty()) return absl::OkStatus();
  {
    absl::MutexLock l(&view_->mu);
    view_->truncated_segments = removed.back() + 1;
    view_->truncated_end = end;
    view_->segments.erase(view_->segments.begin(),
                          view_->segments.begin() + view_->FindSegment(removed.back() + 1));
    view_->Changed();
  }
  // The objects go last: a crash before this leaves garbage (CollectGarbage removes it on the
  // next open), never a listed segment without data.
  const absl::Time deadline = absl::Now() + options_.upload_timeout;
  for (uint64_t segment : removed) RETURN_IF_ERROR(DeleteSegmentObjects(segment, deadline));
  return absl::OkStatus();
}

std::optional<uint64_t> ObjectBackend::StoredBytes() const {
  absl::MutexLock l(&view_->mu);
  uint64_t total = 0;
  for (const SegmentView& s : view_->segments) total += s.bytes;
  return total;
}

}  // namespace kf::wal::objectstore
