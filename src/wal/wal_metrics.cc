#include "wal/wal_metrics.h"

#include "common/errors.h"

namespace kf::wal {
namespace {

metrics::CounterFamily& Appends(metrics::Registry& r) {
  return r.GetCounter("kf_wal_appends_total",
                      "Append calls on the WAL adaptor that finished, by pchannel and streaming "
                      "code (OK = durable)",
                      {"pchannel", "code"});
}

metrics::CounterFamily& ReadMessages(metrics::Registry& r) {
  return r.GetCounter("kf_wal_read_messages_total",
                      "Messages returned to WAL readers (TimeTicks and assembled Txn messages "
                      "included), by the reader's mode: tailing the write-ahead buffer or "
                      "catching up from the backend",
                      {"pchannel", "mode"});
}

}  // namespace

WalMetrics::WalMetrics(metrics::Registry& r, const std::string& pchannel)
    : pchannel_(pchannel),
      appends_(&Appends(r)),
      appends_ok_(appends_->With({pchannel, "OK"})),
      append_bytes_(r.GetCounter("kf_wal_append_bytes_total",
                                 "Encoded bytes (payload and properties) of acknowledged appends",
                                 {"pchannel"})
                        .With({pchannel})),
      append_latency_(r.GetHistogram("kf_wal_append_latency_seconds",
                                     "Seconds from an Append call to its durable callback, "
                                     "acknowledged appends only",
                                     {"pchannel"}, metrics::LatencyBucketsSeconds())
                          .With({pchannel})),
      deduplicated_(r.GetCounter("kf_wal_deduplicated_appends_total",
                                 "Appends answered with the original result of an earlier "
                                 "append with the same idempotency key (nothing written)",
                                 {"pchannel"})
                        .With({pchannel})),
      read_tailing_(ReadMessages(r).With({pchannel, "tailing"})),
      read_catchup_(ReadMessages(r).With({pchannel, "catchup"})) {}

void WalMetrics::AppendFinished(const absl::Status& status, Clock::time_point started,
                                Clock::time_point now, uint64_t bytes) {
  if (status.ok()) {
    appends_ok_->Inc();
    append_bytes_->Inc(bytes);
    append_latency_->Observe(std::chrono::duration<double>(now - started).count());
    return;
  }
  appends_->With({pchannel_, StreamingCodeName(GetStreamingCode(status))})->Inc();
}

metrics::Histogram* FlushDuration(metrics::Registry& registry, const std::string& pchannel) {
  return registry
      .GetHistogram("kf_wal_flush_duration_seconds",
                    "Seconds of each persistence operation of the WAL backend: a local group's "
                    "write and fdatasync, an object block's upload, a quorum member's AddEntries",
                    {"pchannel"}, metrics::LatencyBucketsSeconds())
      .With({pchannel});
}

}  // namespace kf::wal
