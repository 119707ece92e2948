#include "wal/backends/quorum/log_view.h"

#include <algorithm>
#include <functional>

#include "common/status_macros.h"
#include "wal/backends/quorum/logstore_client.h"
#include "wal/backends/quorum/quorum_meta.h"

namespace kf::wal::quorum {

absl::Status RefreshView(QuorumMeta* meta, LogStorePool* pool, absl::Duration rpc_timeout,
                         LogView* view) {
  ASSIGN_OR_RETURN(auto segments, meta->List(absl::Now() + rpc_timeout));
  std::map<uint64_t, ViewSegment> fresh;
  for (const auto& [id, rec] : segments) {
    ViewSegment v;
    v.ensemble.assign(rec.meta.ensemble().begin(), rec.meta.ensemble().end());
    v.sealed = rec.meta.sealed();
    v.end = rec.meta.end();
    v.bytes = rec.meta.bytes();
    if (!v.sealed) {
      std::vector<uint64_t> ends;
      for (const auto& address : v.ensemble) {
        kingfisher::v1::ReadEntriesRequest req;
        req.set_log(meta->log());
        req.set_segment(id);
        auto r = pool->Get(address)->ReadEntries(req, absl::Now() + rpc_timeout);
        if (r.ok()) ends.push_back(r->durable_end());
        if (absl::IsNotFound(r.status())) ends.push_back(0);
      }
      std::sort(ends.begin(), ends.end(), std::greater<>());
      v.end = ends.size() >= 2 ? ends[1] : 0;
    }
    fresh.emplace(id, std::move(v));
  }
  absl::MutexLock l(&view->mu);
  for (auto& [id, v] : fresh) {
    // Never move an end backwards (a replica that answered before may not answer now).
    auto it = view->segments.find(id);
    if (it != view->segments.end() && !v.sealed) v.end = std::max(v.end, it->second.end);
  }
  view->segments = std::move(fresh);
  view->cv.SignalAll();
  return absl::OkStatus();
}

}  // namespace kf::wal::quorum
