// The floor gRPC itself puts under one message of tailing_bench's phase 1: the same
// one-at-a-time traffic (a producer that waits for each answer, one consumer) through
// grpc_floor_server, a process with one completion-queue thread, generic byte streams and a
// write + fdatasync per message, and nothing of Kingfisher's. Between raw_server.h's floor (no
// gRPC) and Kingfisher's figure it tells the share of HTTP/2 and gRPC from Kingfisher's own.
//
// Thread-safety: one call at a time. Errors: Die().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "raw_server.h"

namespace kf::bench {

// Starts `bin_dir`/grpc_floor_server on `path` (fallocate'd to `preallocate` bytes, removed
// afterwards), warms it up, then sends `messages` messages of `size` bytes (>= 16) one at a
// time through it. The server's CPU and switches are its whole process's over the measured
// messages, as tailing_bench counts Kingfisher's.
RawServerResult GrpcFloorRoundTrips(const std::string& bin_dir, const std::string& path,
                                    size_t size, size_t messages, uint64_t preallocate);

}  // namespace kf::bench
