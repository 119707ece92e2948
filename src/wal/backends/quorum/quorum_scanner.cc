#include "wal/backends/quorum/quorum_scanner.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "format/segment_object.h"
#include "wal/backends/quorum/logstore_client.h"
#include "wal/backends/quorum/quorum_meta.h"

namespace kf::wal::quorum {

QuorumScanner::QuorumScanner(const QuorumOpenerOptions& options, LogStorePool* pool,
                             QuorumMeta* meta, std::string log, std::shared_ptr<LogView> view,
                             uint64_t segment, uint64_t entry)
    : options_(options),
      pool_(pool),
      meta_(meta),
      log_(std::move(log)),
      view_(std::move(view)),
      segment_(segment),
      entry_(entry) {}

absl::StatusOr<Entry> QuorumScanner::Next(absl::Time deadline) {
  for (;;) {
    if (!buffer_.empty()) {
      Entry e = std::move(buffer_.front());
      buffer_.pop_front();
      return e;
    }
    ViewSegment seg;
    bool readable = false;
    {
      absl::MutexLock l(&view_->mu);
      if (view_->closed) return absl::CancelledError("quorum WAL: backend closed");
      auto it = view_->segments.lower_bound(segment_);
      if (it != view_->segments.end()) {
        if (it->first > segment_) {
          // Segment ids are consecutive and only truncation removes them, as a prefix: a
          // position below the first left was truncated, unless it is the end of the newest
          // segment truncated. Never a silent skip (docs/recovery-storage.md "Truncation").
          const std::optional<std::pair<uint64_t, uint64_t>> end = view_->truncated_end;
          const bool at_end = end.has_value() && end->first == segment_ && entry_ >= end->second &&
                              it->first == segment_ + 1;
          if (!at_end) {
            return absl::OutOfRangeError(absl::StrCat(
                "quorum WAL ", log_, ": ", MessageId(WalKind::kQuorum, segment_, entry_).ToText(),
                " was truncated; the earliest readable id is ",
                MessageId(WalKind::kQuorum, it->first, 0).ToText()));
          }
          segment_ = it->first;
          entry_ = 0;
        }
        if (entry_ < it->second.end) {
          seg = it->second;
          readable = true;
        } else if (it->second.sealed) {
          ++segment_;
          entry_ = 0;
          continue;
        }
      }
      if (!readable && view_->live) {
        if (view_->cv.WaitWithDeadline(&view_->mu, deadline)) {
          return absl::DeadlineExceededError("quorum WAL: no new entry");
        }
        continue;
      }
    }
    if (readable) {
      absl::Status s = Fetch(segment_, seg, entry_, seg.end);
      if (!s.ok()) return s;
      continue;
    }
    // Read-only: poll the metadata and the open segment's replicas.
    if (absl::Now() >= deadline) return absl::DeadlineExceededError("quorum WAL: no new entry");
    absl::Status s = RefreshView(meta_, pool_, options_.rpc_timeout, view_.get());
    if (!s.ok()) return s;
    absl::MutexLock l(&view_->mu);
    auto it = view_->segments.lower_bound(segment_);
    const bool progress = it != view_->segments.end() &&
                          (it->first > segment_ || entry_ < it->second.end || it->second.sealed);
    if (!progress) {
      view_->cv.WaitWithDeadline(&view_->mu,
                                 std::min(deadline, absl::Now() + absl::Milliseconds(20)));
    }
  }
}

absl::Status QuorumScanner::Fetch(uint64_t segment, const ViewSegment& seg, uint64_t from,
                                  uint64_t to) {
  absl::Status last = absl::UnavailableError("no replica");
  // Start at a replica chosen by segment, so readers spread over the ensemble.
  const size_t n = seg.ensemble.size();
  for (size_t k = 0; k < n; ++k) {
    const std::string& address = seg.ensemble[(segment + k) % n];
    kingfisher::v1::ReadEntriesRequest req;
    req.set_log(log_);
    req.set_segment(segment);
    req.set_from_entry(from);
    req.set_to_entry(to);
    auto r = pool_->Get(address)->ReadEntries(req, absl::Now() + options_.rpc_timeout);
    if (!r.ok()) {
      if (absl::IsDataLoss(r.status())) return r.status();
      last = r.status();
      continue;
    }
    if (r->entries().empty()) continue;  // a replica that is behind
    uint64_t id = from;
    for (auto& data : *r->mutable_entries()) {
      buffer_.push_back(Entry{MessageId(WalKind::kQuorum, segment, id++), std::move(data)});
    }
    segment_ = segment;
    entry_ = id;
    return absl::OkStatus();
  }
  if (options_.object_store != nullptr && seg.sealed) {
    auto object =
        options_.object_store->Get(format::SegmentObjectKey(options_.object_prefix, log_, segment),
                                   object::ByteRange::All(), absl::Now() + options_.rpc_timeout);
    if (object.ok()) {
      auto entries = format::ParseSegmentObject(*object);
      if (!entries.ok()) return entries.status();
      if (entries->size() < to) {
        return absl::DataLossError(absl::StrCat("quorum WAL: segment object of ", log_, "/",
                                                segment, " holds ", entries->size(),
                                                " entries, not ", to));
      }
      for (uint64_t id = from; id < to; ++id) {
        buffer_.push_back(
            Entry{MessageId(WalKind::kQuorum, segment, id), std::move((*entries)[id])});
      }
      segment_ = segment;
      entry_ = to;
      return absl::OkStatus();
    }
    if (!absl::IsNotFound(object.status())) last = object.status();
  }
  return absl::UnavailableError(absl::StrCat("quorum WAL: no replica of ", log_, "/", segment,
                                             " serves entry ", from, ": ", last.message()));
}

}  // namespace kf::wal::quorum
