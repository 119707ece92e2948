// What the library's own files and the server side use beyond the public API
// (include/kingfisher/client.h): a client with the in-process fast path, a producer that
// appends messages of the full model (system properties included: transactions, the
// broadcaster's DDL copies), and the public API's clock types in Abseil's terms.
//
// Thread-safety: as the public API. Errors: as Client::Connect.
#pragma once

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/local_transport.h"
#include "kingfisher/client.h"

namespace kf::client {

class ProducerImpl;

// Client::Connect with the in-process fast path through `local` (may be empty: none).
absl::StatusOr<std::unique_ptr<kingfisher::Client>> ConnectWith(kingfisher::ClientOptions options,
                                                                LocalTransport local);

// Client::CreateProducer as the concrete producer, whose AppendMessage takes the message model.
std::unique_ptr<ProducerImpl> NewProducer(const kingfisher::Client& client,
                                          kingfisher::ProducerOptions options = {});

inline absl::Duration AbslDuration(kingfisher::Duration d) { return absl::FromChrono(d); }
inline absl::Time AbslTime(kingfisher::Deadline t) { return absl::FromChrono(t); }
// `deadline`, or now + `timeout` when there is none.
inline absl::Time DeadlineOr(const std::optional<kingfisher::Deadline>& deadline,
                             kingfisher::Duration timeout) {
  return deadline ? AbslTime(*deadline) : absl::Now() + AbslDuration(timeout);
}

}  // namespace kf::client
