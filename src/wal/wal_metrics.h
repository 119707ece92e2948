// WalMetrics: what one Wal (one pchannel) reports to the metrics registry (docs/operations.md):
//   kf_wal_appends_total{pchannel,code}       Append calls finished, by StreamingCodeName ("OK")
//   kf_wal_append_bytes_total{pchannel}       encoded bytes of acknowledged appends
//   kf_wal_append_latency_seconds{pchannel}   Append call -> durable callback, acknowledged only
//   kf_wal_deduplicated_appends_total{pchannel}  retries answered from the `_ik` table
//   kf_wal_read_messages_total{pchannel,mode} messages returned to readers (tailing|catchup)
// Only appends made through Wal::Append count; the adaptor's own TimeTicks do not.
// The backend's own figure, given to it when it opens (OpenOptions::flush_duration):
//   kf_wal_flush_duration_seconds{pchannel}   one persistence operation (a local group's write
//                                             and fdatasync, an object block's upload, a quorum
//                                             member's AddEntries)
//
// The children are resolved once, when the Wal opens, so the append path costs a clock read at
// each end, one bucket search and a few relaxed atomic adds, with no lock and no allocation;
// only a failure looks its code's child up (the error path may take the family's mutex).
//
// Thread-safety: thread-safe. Ownership: borrows children owned by the registry, which must
// outlive the Wal (the default registry lives forever).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "common/metrics/registry.h"

namespace kf::wal {

class WalMetrics {
 public:
  using Clock = std::chrono::steady_clock;

  WalMetrics(metrics::Registry& registry, const std::string& pchannel);

  // One Append call finished at `now`: OK once durable (latency from `started`, `bytes`
  // appended), or failed with `status` (no latency, no bytes).
  void AppendFinished(const absl::Status& status, Clock::time_point started, Clock::time_point now,
                      uint64_t bytes);
  void Deduplicated() { deduplicated_->Inc(); }

  metrics::Counter* read_tailing() const { return read_tailing_; }
  metrics::Counter* read_catchup() const { return read_catchup_; }

 private:
  const std::string pchannel_;
  metrics::CounterFamily* const appends_;
  metrics::Counter* const appends_ok_;
  metrics::Counter* const append_bytes_;
  metrics::Histogram* const append_latency_;
  metrics::Counter* const deduplicated_;
  metrics::Counter* const read_tailing_;
  metrics::Counter* const read_catchup_;
};

// The child of kf_wal_flush_duration_seconds for `pchannel`: what a backend opened for it is
// given as OpenOptions::flush_duration. Owned by `registry`.
metrics::Histogram* FlushDuration(metrics::Registry& registry, const std::string& pchannel);

}  // namespace kf::wal
