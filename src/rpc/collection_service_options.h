// Options of the Collections service (CollectionService). Plain struct of a borrowed pointer
// and limits; no gRPC types, so binaries can fill it without including gRPC headers.
#pragma once

#include "absl/time/time.h"

namespace kf {
namespace streaming {
class DdlHost;
}  // namespace streaming

namespace rpc {

struct CollectionServiceOptions {
  // The DDL of the acting coordinator; must outlive the server. Null: the service is not
  // registered (streaming nodes), so clients get UNIMPLEMENTED.
  streaming::DdlHost* ddl = nullptr;
  // Calls running at once (each on its own worker thread); more: RESOURCE_EXHAUSTED.
  int max_calls = 64;
  // The deadline of a call without one, and the longest one honoured.
  absl::Duration max_call_timeout = absl::Seconds(60);
};

}  // namespace rpc
}  // namespace kf
