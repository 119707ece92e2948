#include "wal/backends/local/log_state.h"

#include <map>

#include "common/status_macros.h"
#include "wal/backends/local/disk_view.h"

namespace kf::wal::local {

std::shared_ptr<Segment> LogState::NextSegment(const Segment* seg) const {
  for (size_t i = 0; i < segments.size(); ++i) {
    if (segments[i].get() == seg) {
      return i + 1 < segments.size() ? segments[i + 1] : nullptr;
    }
  }
  // `seg` was truncated away: continue at the first segment after its position.
  for (const auto& s : segments) {
    if (std::tie(s->base, s->term) > std::tie(seg->base, seg->term)) return s;
  }
  return nullptr;
}

absl::StatusOr<std::shared_ptr<fs::RandomAccessFile>> LogState::FileOf(Segment* seg) {
  {
    absl::MutexLock l(&mu);
    if (seg->file) return seg->file;
  }
  ASSIGN_OR_RETURN(auto file, fs_->OpenRandomAccess(seg->path));
  absl::MutexLock l(&mu);
  if (!seg->file) seg->file = std::move(file);
  return seg->file;
}

absl::StatusOr<uint64_t> LogState::EnsureIndex(Segment* seg) {
  uint64_t from = 0, offset = 0, limit = 0;
  {
    absl::MutexLock l(&mu);
    from = seg->indexed_pos;
    offset = seg->indexed_offset;
    limit = seg->limit;
    if (from >= limit) return offset;
  }
  ASSIGN_OR_RETURN(auto file, FileOf(seg));
  std::vector<IndexPoint> points;
  uint64_t end_pos = from;
  RETURN_IF_ERROR(HopIndex(file.get(), seg->path, from, limit, &offset, &end_pos, &points));
  absl::MutexLock l(&mu);
  if (seg->indexed_pos == from) {
    for (const auto& p : points) MaybeAddIndexPoint(&seg->index, p);
    seg->indexed_pos = end_pos;
    seg->indexed_offset = offset;
  }
  return seg->indexed_offset;
}

absl::Status LogState::RefreshFromDisk() {
  ASSIGN_OR_RETURN(DiskView view, LoadDiskView(fs_, dir_));
  std::vector<EffectiveSegment> eff = ComputeEffective(view, nullptr);
  absl::MutexLock l(&mu);
  std::map<std::string, std::shared_ptr<Segment>> old;
  for (auto& s : segments) old[s->name] = s;
  std::vector<std::shared_ptr<Segment>> next;
  bool changed = eff.size() != segments.size();
  for (const auto& e : eff) {
    std::shared_ptr<Segment> seg;
    auto it = old.find(e.file.name);
    if (it != old.end()) {
      seg = it->second;
    } else {
      seg = std::make_shared<Segment>(e.file.name, fs::JoinPath(dir_, e.file.name), e.file.base,
                                      e.file.term);
      changed = true;
    }
    uint64_t limit = seg->limit;
    bool tolerate = false;
    switch (e.kind) {
      case EffectiveSegment::Kind::kFull:
        limit = e.file.size;
        break;
      case EffectiveSegment::Kind::kCapped:
        limit = e.cap;
        break;
      case EffectiveSegment::Kind::kLive:
        limit = e.file.size;
        tolerate = true;
        break;
      case EffectiveSegment::Kind::kPending:
        // Wait for the seal: bytes written after the fence may be dropped by it.
        tolerate = true;
        break;
    }
    if (limit < seg->indexed_pos) {
      // A seal cut below what was indexed: forget the index beyond the cut.
      std::erase_if(seg->index, [&](const IndexPoint& p) { return p.pos >= limit; });
      seg->indexed_pos = 0;
      seg->indexed_offset = seg->base;
      seg->index.clear();
    }
    if (limit != seg->limit || tolerate != seg->tolerate_tail) changed = true;
    seg->limit = limit;
    seg->tolerate_tail = tolerate;
    next.push_back(std::move(seg));
  }
  if (changed) {
    segments = std::move(next);
    ++version;
    cv.SignalAll();
  }
  return absl::OkStatus();
}

}  // namespace kf::wal::local
