// AppendLoad: the append workload cluster_bench runs through each append path (the in-process
// fast path and the distributed one), so the two figures differ only in the path.
//
// `producers` Producers of one Client, each on its own thread, append `messages` (split
// evenly) Insert messages of `payload_bytes` to vchannels[i % size]. window == 1: AppendSync
// one at a time; window > 1: up to `window` AppendAsync unacknowledged per producer. Every
// producer first appends a few untimed messages (streams, routes and channels warm).
//
// Thread-safety: one call at a time per Client. Ownership: borrows the client.
// Errors: a failed append ends the process (kf::bench::Die).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kingfisher/client.h"

namespace kf::bench {

struct LoadOptions {
  std::string label;  // for progress lines on stderr
  int producers = 8;
  std::vector<std::string> vchannels;
  size_t payload_bytes = 1024;
  uint64_t messages = 20000;
  int window = 1;
};

struct LoadResult {
  uint64_t messages = 0;          // timed appends (warm-up excluded)
  double seconds = 0;             // from the first timed append to the last ack
  std::vector<double> latencies;  // seconds, append call to ack
};

LoadResult RunAppendLoad(kingfisher::Client& client, const LoadOptions& options);

}  // namespace kf::bench
