// The Search service's options, apart from the service so that the binaries configure it
// without gRPC headers (rpc_server.h).
#pragma once

#include "absl/time/time.h"

namespace kf::query {
class QueryRegistry;
}

namespace kf::rpc {

struct SearchServiceOptions {
  const query::QueryRegistry* queries = nullptr;  // served when set; borrowed
  int max_calls = 256;                            // calls at once; beyond: RESOURCE_EXHAUSTED
  absl::Duration max_call_timeout = absl::Seconds(30);
};

}  // namespace kf::rpc
