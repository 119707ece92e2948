#include "wal/backends/objectstore/object_scanner.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "wal/backends/objectstore/block_format.h"

namespace kf::wal::objectstore {

absl::StatusOr<Entry> ObjectScanner::Next(absl::Time deadline) {
  while (ready_.empty()) {
    if (absl::Status s = Advance(deadline); !s.ok()) return s;
  }
  Entry e = std::move(ready_.front());
  ready_.pop_front();
  return e;
}

bool ObjectScanner::LostToTruncation() {
  if (segment_ >= view_->truncated_segments) return false;
  // Exactly past the end of the newest truncated segment (a reader resuming after its last
  // entry): nothing it wants is gone, it goes on at the next segment.
  if (view_->truncated_end.has_value() && view_->truncated_end->segment() == segment_ &&
      segment_ + 1 == view_->truncated_segments &&
      skip_below_ >= view_->truncated_end->end_entry()) {
    segment_ = view_->truncated_segments;
    block_ = 0;
    skip_below_ = 0;
    return false;
  }
  return true;
}

absl::Status ObjectScanner::TruncatedError() const {
  // Never a silent skip (docs/recovery-storage.md "Truncation").
  return absl::OutOfRangeError(absl::StrCat(
      "objectstore WAL ", view_->layout().pchannel(), ": segment ", segment_,
      " was truncated; the earliest readable id is ",
      IdOf(view_->segments.empty() ? view_->truncated_segments : view_->segments.front().id, 0)
          .ToText()));
}

absl::Status ObjectScanner::Advance(absl::Time deadline) {
  bool refresh = false;
  {
    absl::MutexLock l(&view_->mu);
    if (view_->closed) return absl::CancelledError("objectstore WAL: backend closed");
    if (LostToTruncation()) return TruncatedError();
    const size_t i = view_->FindSegment(segment_);
    if (i < view_->segments.size()) {
      const SegmentView& seg = view_->segments[i];
      if (seg.id != segment_) {  // ours is gone (empty) or not there: go on at the next one
        segment_ = seg.id;
        block_ = 0;
        skip_below_ = 0;
      }
      if (block_ < seg.blocks) {
        const uint64_t block = block_;
        const MergedRun* run = seg.MergedAt(block);
        const std::optional<MergedRun> merged = run ? std::optional(*run) : std::nullopt;
        view_->mu.Unlock();
        absl::Status s = merged ? ReadMerged(*merged, deadline) : ReadBlock(block, deadline);
        view_->mu.Lock();
        return s;
      }
      if (seg.sealed && i + 1 < view_->segments.size()) {
        segment_ = view_->segments[i + 1].id;
        block_ = 0;
        skip_below_ = 0;
        return absl::OkStatus();
      }
    }
    // At the end: wait for the writer to publish more, or poll the stores.
    if (!view_->read_only()) {
      const uint64_t seen = view_->version;
      while (view_->version == seen && !view_->closed) {
        if (view_->cv.WaitWithDeadline(&view_->mu, deadline)) break;
      }
      if (view_->version != seen || view_->closed) return absl::OkStatus();
      return absl::DeadlineExceededError("objectstore WAL: no new entry");
    }
    refresh = true;
  }
  if (refresh) {
    uint64_t before;
    {
      absl::MutexLock l(&view_->mu);
      before = view_->version;
    }
    if (absl::Status s = view_->Refresh(view_->RequestDeadline(deadline)); !s.ok()) return s;
    absl::MutexLock l(&view_->mu);
    if (view_->version == before) {
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError("objectstore WAL: no new entry");
      }
      // Nothing new: wait one poll interval (or until closed) before the next probe.
      view_->cv.WaitWithDeadline(&view_->mu,
                                 std::min(deadline, absl::Now() + view_->poll_interval()));
    }
  }
  return absl::OkStatus();
}

absl::Status ObjectScanner::ReadBlock(uint64_t block, absl::Time deadline) {
  auto bytes = view_->FetchBlock(segment_, block, view_->RequestDeadline(deadline));
  if (absl::IsNotFound(bytes.status())) {
    return Missing(block, view_->layout().BlockKey(segment_, block), deadline);
  }
  if (!bytes.ok()) return bytes.status();
  RETURN_IF_ERROR(Decode(**bytes, block));
  block_ = block + 1;
  return absl::OkStatus();
}

absl::Status ObjectScanner::ReadMerged(const MergedRun& run, absl::Time deadline) {
  const std::string key = view_->layout().MergedKey(segment_, run.first, run.end);
  auto bytes = view_->FetchMerged(segment_, run, view_->RequestDeadline(deadline));
  if (absl::IsNotFound(bytes.status())) return Missing(run.first, key, deadline);
  if (!bytes.ok()) return bytes.status();
  ASSIGN_OR_RETURN(auto blocks, SplitMerged(*bytes, run.end - run.first, key));
  for (uint64_t b = std::max(block_, run.first); b < run.end; ++b) {
    RETURN_IF_ERROR(Decode(blocks[b - run.first], b));
  }
  block_ = run.end;
  return absl::OkStatus();
}

absl::Status ObjectScanner::Decode(std::string_view bytes, uint64_t block) {
  BlockHeader header;
  const uint64_t segment = segment_;
  const std::string key = view_->layout().BlockKey(segment, block);
  RETURN_IF_ERROR(
      DecodeBlock(bytes, segment, block, key, &header, [&](uint64_t entry, std::string_view data) {
        if (entry >= skip_below_) {
          ready_.push_back(Entry{IdOf(segment, entry), std::string(data)});
        }
      }));
  if (header.kind != BlockKind::kData) {
    return StreamingError(StreamingCode::kDataLoss,
                          absl::StrCat("objectstore WAL: durable block ", key, " is a fence"));
  }
  return absl::OkStatus();
}

absl::Status ObjectScanner::Missing(uint64_t block, const std::string& key, absl::Time deadline) {
  if (view_->read_only()) RETURN_IF_ERROR(view_->Refresh(view_->RequestDeadline(deadline)));
  absl::MutexLock l(&view_->mu);
  const uint64_t segment = segment_;
  if (LostToTruncation()) return TruncatedError();
  if (segment_ != segment) return absl::OkStatus();  // nothing wanted was in it: read on
  const size_t i = view_->FindSegment(segment_);
  if (i < view_->segments.size() && view_->segments[i].id == segment_) {
    const MergedRun* run = view_->segments[i].MergedAt(block);
    // Compacted after we looked: read the compacted object instead (unless that is missing).
    if (run != nullptr && key != view_->layout().MergedKey(segment_, run->first, run->end)) {
      return absl::OkStatus();
    }
  }
  return StreamingError(StreamingCode::kDataLoss,
                        absl::StrCat("objectstore WAL: durable object ", key, " is missing"));
}

}  // namespace kf::wal::objectstore
