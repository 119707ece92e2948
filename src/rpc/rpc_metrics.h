// RpcMetrics: what the StreamingNode service reports (docs/operations.md):
//   kf_rpc_produce_total{code}      produce requests answered, by streaming code ("OK" = acked)
//   kf_rpc_consume_messages_total   messages sent on consume streams (TimeTicks and Txn included)
//   kf_rpc_consume_bytes_total      their encoded size
//   kf_errors_total{code}           requests the node failed, by streaming code: produce
//                                   requests answered with an error and consume streams ended
//                                   by an error (a client's cancel is not an error)
// Counted before the answer is written, so a client that has its answer also sees it counted.
//
// Thread-safety: thread-safe. Ownership: borrows children owned by the registry, which must
// outlive the service (the default registry lives forever).
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "common/errors.h"
#include "common/metrics/registry.h"

namespace kf::rpc {

class RpcMetrics {
 public:
  explicit RpcMetrics(metrics::Registry& registry);

  // One produce request answered with `code` (kOk: acknowledged).
  void Produced(StreamingCode code);
  void Consumed(uint64_t messages, uint64_t bytes) {
    consume_messages_->Inc(messages);
    consume_bytes_->Inc(bytes);
  }
  // A request failed outside the produce responses (e.g. a consume stream's end).
  void Failed(const absl::Status& status) { Failed(GetStreamingCode(status)); }
  void Failed(StreamingCode code);

 private:
  metrics::CounterFamily* const produce_;
  metrics::Counter* const produce_ok_;
  metrics::Counter* const consume_messages_;
  metrics::Counter* const consume_bytes_;
  metrics::CounterFamily* const errors_;
};

}  // namespace kf::rpc
