// LogView: what the scanners of one quorum log may read — each segment's ensemble and its
// readable end (sealed: its sealed end; open: what the writer acknowledged). The writer in
// this process keeps it current and signals `cv`; a read-only backend's scanners refresh it
// from the metadata store and the ensemble (Refresh).
//
// Thread-safety: fields guarded by `mu`. Ownership: shared by the backend and its scanners.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kf::wal::quorum {

class LogStorePool;
class QuorumMeta;

struct ViewSegment {
  std::vector<std::string> ensemble;
  bool sealed = false;
  uint64_t end = 0;    // entries [0, end) are readable
  uint64_t bytes = 0;  // payload bytes of [0, end) (an estimate for recovered segments)
};

struct LogView {
  absl::Mutex mu;
  absl::CondVar cv;
  std::map<uint64_t, ViewSegment> segments ABSL_GUARDED_BY(mu);
  bool closed ABSL_GUARDED_BY(mu) = false;
  // The newest segment the writer truncated and its end: a reader positioned at that end
  // missed nothing (it goes on at the next segment). A read-only view does not know it.
  std::optional<std::pair<uint64_t, uint64_t>> truncated_end ABSL_GUARDED_BY(mu);
  bool live = false;  // a writer maintains it (const after construction)
};

// Read-only backends: reloads `view` from the metadata; an open segment is readable up to the
// second-highest durable end among its replicas (entries on 2 replicas survive any recovery).
absl::Status RefreshView(QuorumMeta* meta, LogStorePool* pool, absl::Duration rpc_timeout,
                         LogView* view);

}  // namespace kf::wal::quorum
