// Loopback helpers for tests and benches that start real servers (etcd, Ceph RGW, kingfisher):
// a free port to give them, and a plain HTTP GET of their health and metrics endpoints.
//
// Thread-safety: thread-safe. Errors: FreeLoopbackPort returns 0 when no port could be bound;
// HttpGet returns "" when the connection fails.
#pragma once

#include <string>
#include <string_view>

#include "absl/time/time.h"

namespace kf::testing {

// A TCP port on 127.0.0.1 that was free a moment ago, drawn at random outside the kernel's
// ephemeral range, so that no connection takes it as its local port while a server restarts on
// it. Another test may still draw and bind it first; servers started with it then fail to
// start, which the callers report (or retry with another port).
int FreeLoopbackPort();

// A socket listening on 127.0.0.1:`port` (holding it, e.g. to take a port a server is about to
// bind), or -1 when the port cannot be bound. The caller closes it.
int ListenOnLoopback(int port);

// One HTTP/1.0 GET of `path` on 127.0.0.1:`port`: the whole response (status line, headers,
// body), read until the server closes or `timeout` passes without data.
std::string HttpGet(int port, std::string_view path, absl::Duration timeout = absl::Seconds(5));

// The sum of the values of a metric's series on a server's /metrics at 127.0.0.1:`port`:
// `name` alone sums every series of the metric, `name{labels}` (the labels exactly as the
// server prints them) picks one. -1 when no series matches.
double MetricSum(int port, std::string_view name);

}  // namespace kf::testing
