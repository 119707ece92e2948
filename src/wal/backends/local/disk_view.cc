#include "wal/backends/local/disk_view.h"

#include <algorithm>

#include "common/status_macros.h"

namespace kf::wal::local {

absl::StatusOr<std::optional<Term>> ReadFenceTerm(fs::FileSystem* fs, const std::string& dir) {
  auto names = fs->GetChildren(fs::JoinPath(dir, kFenceDir));
  if (!names.ok()) {
    if (absl::IsNotFound(names.status())) return std::optional<Term>();
    return names.status();
  }
  return HighestFenceTerm(*names);
}

std::optional<Term> HighestFenceTerm(const std::vector<std::string>& names) {
  std::optional<Term> out;
  for (const auto& n : names) {
    Term t;
    if (ParseTermFileName(n, &t) && (!out || t > *out)) out = t;
  }
  return out;
}

absl::StatusOr<DiskView> LoadDiskView(fs::FileSystem* fs, const std::string& dir) {
  DiskView view;
  ASSIGN_OR_RETURN(auto names, fs->GetChildren(dir));
  for (const auto& n : names) {
    SegmentFile f;
    if (!ParseSegmentFileName(n, &f.base, &f.term)) continue;
    f.name = n;
    view.segments.push_back(std::move(f));
  }
  std::sort(view.segments.begin(), view.segments.end(), [](const auto& a, const auto& b) {
    return std::tie(a.base, a.term) < std::tie(b.base, b.term);
  });
  for (auto& f : view.segments) {
    auto size = fs->GetFileSize(fs::JoinPath(dir, f.name));
    if (!size.ok()) {
      if (absl::IsNotFound(size.status())) continue;  // truncated meanwhile
      return size.status();
    }
    f.size = *size;
  }
  ASSIGN_OR_RETURN(view.fence, ReadFenceTerm(fs, dir));
  const std::string seal_dir = fs::JoinPath(dir, kSealDir);
  auto seal_names = fs->GetChildren(seal_dir);
  if (!seal_names.ok() && !absl::IsNotFound(seal_names.status())) return seal_names.status();
  if (seal_names.ok()) {
    for (const auto& n : *seal_names) {
      Term t;
      if (!ParseTermFileName(n, &t)) continue;  // temp files of an interrupted seal
      const std::string path = fs::JoinPath(seal_dir, n);
      ASSIGN_OR_RETURN(std::string bytes, fs::ReadFileToString(fs, path));
      ASSIGN_OR_RETURN(SealRecord rec, DecodeSealRecord(bytes, path));
      view.seals[t] = rec;
    }
  }
  return view;
}

std::vector<EffectiveSegment> ComputeEffective(const DiskView& view,
                                               std::vector<SegmentFile>* garbage) {
  // Last segment (highest base) of each term and the highest term that wrote anything.
  std::map<Term, uint64_t> last_base;
  std::optional<Term> newest;
  for (const auto& f : view.segments) {
    auto [it, inserted] = last_base.emplace(f.term, f.base);
    if (!inserted) it->second = std::max(it->second, f.base);
    if (!newest || f.term > *newest) newest = f.term;
  }
  std::vector<EffectiveSegment> out;
  for (const auto& f : view.segments) {
    EffectiveSegment e;
    e.file = f;
    auto seal = view.seals.find(f.term);
    if (seal != view.seals.end()) {
      if (f.base > seal->second.segment_base) {
        if (garbage != nullptr) garbage->push_back(f);
        continue;
      }
      if (f.base == seal->second.segment_base) {
        e.kind = EffectiveSegment::Kind::kCapped;
        e.cap = seal->second.length;
        e.cap_end_offset = seal->second.end_offset;
      }
    } else if (f.base == last_base[f.term]) {
      const bool fenced = view.fence && *view.fence > f.term;
      e.kind = (f.term == *newest && !fenced) ? EffectiveSegment::Kind::kLive
                                              : EffectiveSegment::Kind::kPending;
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace kf::wal::local
