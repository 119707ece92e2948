// The least a server can do for one message of tailing_bench's phase 1, with no gRPC, no WAL
// and no threads between: a process of its own, with one thread, reads a request from a
// producer's TCP connection on loopback, writes + fdatasyncs it to a preallocated file, answers
// the producer and forwards the message to a consumer's connection. Its CPU and context switches
// per message are the floor under a real server's on the same machine: the sync, the network calls
// and the wake-ups they imply, and nothing else.
//
// Thread-safety: one call at a time per file. Errors: Die().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kf::bench {

struct RawServerResult {
  std::vector<double> latencies;           // producer's send -> consumer's receipt, seconds
  double server_cpu_per_message = 0;       // seconds, the serving thread's
  double server_switches_per_message = 0;  // the serving thread's, voluntary + involuntary
};

// `messages` messages of `size` bytes (>= 8), one at a time: the next is sent once the
// previous one's answer arrived. `path` is created (fallocate'd to `preallocate` bytes, as the
// local WAL's segments are), and removed afterwards.
RawServerResult RawServerRoundTrips(const std::string& path, size_t size, size_t messages,
                                    uint64_t preallocate);

}  // namespace kf::bench
