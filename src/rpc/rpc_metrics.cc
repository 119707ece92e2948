#include "rpc/rpc_metrics.h"

namespace kf::rpc {

RpcMetrics::RpcMetrics(metrics::Registry& r)
    : produce_(&r.GetCounter("kf_rpc_produce_total",
                             "Produce requests answered, by streaming code (OK = acknowledged)",
                             {"code"})),
      produce_ok_(produce_->With({"OK"})),
      consume_messages_(r.GetCounter("kf_rpc_consume_messages_total",
                                     "Messages sent on Consume streams (TimeTicks and Txn "
                                     "messages included)")
                            .With({})),
      consume_bytes_(r.GetCounter("kf_rpc_consume_bytes_total",
                                  "Encoded bytes of the messages sent on Consume streams")
                         .With({})),
      errors_(&r.GetCounter("kf_errors_total",
                            "Requests that failed, by streaming code (docs/semantics.md §3 error "
                            "table): produce requests answered with an error and consume streams "
                            "ended by one",
                            {"code"})) {}

void RpcMetrics::Produced(StreamingCode code) {
  if (code == StreamingCode::kOk) {
    produce_ok_->Inc();
    return;
  }
  produce_->With({StreamingCodeName(code)})->Inc();
  Failed(code);
}

void RpcMetrics::Failed(StreamingCode code) { errors_->With({StreamingCodeName(code)})->Inc(); }

}  // namespace kf::rpc
