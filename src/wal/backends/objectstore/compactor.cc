#include "wal/backends/objectstore/compactor.h"

#include "wal/backends/objectstore/log_meta.h"

namespace kf::wal::objectstore {

std::vector<MergedRun> PlanCompaction(const std::vector<uint64_t>& block_bytes, uint64_t target) {
  std::vector<MergedRun> runs;
  uint64_t first = 0, bytes = 0;
  for (uint64_t b = 0; b <= block_bytes.size(); ++b) {
    if (b == block_bytes.size() || (b > first && bytes + block_bytes[b] > target)) {
      if (b - first >= 2) runs.push_back({first, b});
      first = b;
      bytes = 0;
    }
    if (b < block_bytes.size()) bytes += block_bytes[b];
  }
  return runs;
}

absl::Status WriteMerged(LogView* view, uint64_t segment, const MergedRun& run,
                         absl::Time deadline) {
  std::string merged;
  for (uint64_t b = run.first; b < run.end; ++b) {
    auto block = view->FetchBlock(segment, b, deadline);
    if (!block.ok()) return block.status();
    merged += **block;
  }
  const std::string key = view->layout().MergedKey(segment, run.first, run.end);
  return RetryUnavailable(deadline, [&] { return view->store()->Put(key, merged, {}, deadline); })
      .status();
}

}  // namespace kf::wal::objectstore
