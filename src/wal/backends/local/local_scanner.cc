#include "wal/backends/local/local_scanner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace kf::wal::local {
namespace {

// How often a read-only scanner re-reads the directory while waiting for another process.
constexpr absl::Duration kPollInterval = absl::Milliseconds(2);

absl::Status DataLoss(const std::string& path, uint64_t pos, std::string_view what) {
  return StreamingError(
      StreamingCode::kDataLoss,
      absl::StrCat("local WAL segment ", path, " at byte ", pos, ": ", std::string(what)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<LocalScanner>> LocalScanner::Create(std::shared_ptr<LogState> state,
                                                                   uint64_t start) {
  std::unique_ptr<LocalScanner> s(new LocalScanner(std::move(state)));
  RETURN_IF_ERROR(s->Seek(start));
  return s;
}

void LocalScanner::Enter(std::shared_ptr<Segment> seg, uint64_t pos, uint64_t offset) {
  seg_ = std::move(seg);
  pos_ = pos;
  next_offset_ = offset;
  reader_.reset();
  file_.reset();
}

absl::Status LocalScanner::Seek(uint64_t start) {
  skip_below_ = start;
  std::shared_ptr<Segment> target;
  {
    absl::MutexLock l(&state_->mu);
    if (state_->segments.empty()) return absl::OkStatus();  // Next picks the first segment
    if (start < state_->segments.front()->base) {
      // Never a silent skip (docs/recovery-storage.md "Truncation").
      return absl::OutOfRangeError(
          absl::StrCat("local WAL: ", MessageId::Local(start).ToText(),
                       " was truncated; the earliest readable id is ",
                       MessageId::Local(state_->segments.front()->base).ToText()));
    }
    for (const auto& s : state_->segments) {
      if (s->base <= start) target = s;
    }
  }
  RETURN_IF_ERROR(state_->EnsureIndex(target.get()).status());
  IndexPoint at{target->base, 0};
  {
    absl::MutexLock l(&state_->mu);
    for (const auto& p : target->index) {
      if (p.offset > start) break;
      at = p;
    }
  }
  Enter(target, at.pos, at.offset);
  return absl::OkStatus();
}

absl::Status LocalScanner::Wait(uint64_t seen_version, absl::Time deadline) {
  if (state_->read_only()) {
    RETURN_IF_ERROR(state_->RefreshFromDisk());
  }
  absl::MutexLock l(&state_->mu);
  while (state_->version == seen_version && !state_->closed) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError("no new durable entry before the deadline");
    }
    absl::Time until = deadline;
    if (state_->read_only()) until = std::min(deadline, absl::Now() + kPollInterval);
    state_->cv.WaitWithDeadline(&state_->mu, until);
    if (state_->read_only()) break;  // poll the directory again
  }
  return absl::OkStatus();
}

absl::StatusOr<Entry> LocalScanner::Next(absl::Time deadline) {
  for (;;) {
    if (!ready_.empty()) {
      Entry e = std::move(ready_.front());
      ready_.pop_front();
      return e;
    }
    uint64_t version = 0, limit = 0;
    bool tolerate = false;
    std::shared_ptr<Segment> next;
    {
      absl::MutexLock l(&state_->mu);
      if (state_->closed) return absl::CancelledError("local WAL backend closed");
      version = state_->version;
      if (seg_ == nullptr) {
        if (!state_->segments.empty()) {
          auto first = state_->segments.front();
          Enter(first, 0, first->base);
        }
      }
      if (seg_ != nullptr) {
        limit = seg_->limit;
        tolerate = seg_->tolerate_tail;
        next = state_->NextSegment(seg_.get());
      }
    }
    if (seg_ != nullptr && pos_ < limit) {
      if (reader_ == nullptr) {
        ASSIGN_OR_RETURN(file_, state_->FileOf(seg_.get()));
        reader_ = std::make_unique<BatchReader>(file_.get(), seg_->path);
      }
      format::BatchHeader h;
      std::string_view payload;
      ASSIGN_OR_RETURN(auto r, reader_->Read(pos_, limit, &h, &payload));
      if (r == BatchReader::Result::kOk) {
        if (h.base_offset != next_offset_) {
          return DataLoss(
              seg_->path, pos_,
              absl::StrCat("batch base offset ", h.base_offset, ", expected ", next_offset_));
        }
        absl::Status s = format::ForEachEntry(h, payload, [&](uint64_t off, std::string_view data) {
          if (off >= skip_below_) ready_.push_back(Entry{MessageId::Local(off), std::string(data)});
        });
        if (!s.ok()) return DataLoss(seg_->path, pos_, ToStd(s.message()));
        pos_ += h.total_size();
        next_offset_ += h.count;
        continue;
      }
      if (!tolerate) {
        return DataLoss(seg_->path, pos_,
                        r == BatchReader::Result::kCorrupt ? "corrupt batch" : "truncated batch");
      }
      // Another process is still writing this batch: wait for it.
    } else if (seg_ != nullptr && next != nullptr && pos_ >= limit) {
      if (next->base != next_offset_) {
        return DataLoss(next->path, 0,
                        absl::StrCat("segment starts at offset ", next->base,
                                     " but the previous one ended at ", next_offset_));
      }
      Enter(next, 0, next->base);
      continue;
    }
    RETURN_IF_ERROR(Wait(version, deadline));
  }
}

}  // namespace kf::wal::local
