// Options of the StreamingNode service (Produce/Consume handlers). Plain struct; defaults are
// the defaults of docs/semantics.md.
#pragma once

#include <cstddef>
#include <functional>

#include "absl/time/time.h"

namespace kf::metrics {
class Registry;
}

namespace kf::rpc {

struct StreamingNodeOptions {
  // Largest accepted message payload (docs/semantics.md §2: 64 MiB, configurable).
  size_t max_payload_bytes = 64u << 20;
  // Appends one Produce stream may have in flight before the handler stops reading requests
  // (back-pressure onto the client's flow control instead of an unbounded queue).
  size_t max_inflight_appends_per_stream = 4096;
  // How long a consumer's scanner waits for the next message before re-checking for
  // cancellation and shutdown.
  absl::Duration scan_poll_interval = absl::Milliseconds(100);
  // Threads that serve every tailing consumer of the node (ConsumeStream's pumps); 0: one per
  // hardware thread.
  int tail_pump_threads = 0;
  // A consumer's messages read but not yet written to gRPC; when full, the stream stops
  // reading until the client takes some (back-pressure, bounded memory).
  size_t consume_queue_messages = 256;
  size_t consume_queue_bytes = 8 << 20;
  // An observer (server/server_main.h ServerHooks): called on the append's completion thread
  // after an append became durable and before its ack is queued to the client. Empty in
  // production; a test build of the server crashes here.
  std::function<void()> after_durable;
  // Where the service's metrics go (rpc_metrics.h); borrowed, must outlive the service. Null:
  // the process-wide metrics::DefaultRegistry().
  metrics::Registry* metrics = nullptr;
};

}  // namespace kf::rpc
