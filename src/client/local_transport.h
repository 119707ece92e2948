// LocalTransport: the in-process fast path (docs/semantics.md §5 "Client"). A client that lives
// in a streaming node's process appends to and reads from the node's own WALs whenever the
// route of a pchannel points at this node, instead of through gRPC to itself. Routing, retries,
// errors and the resume rules are those of the remote path; only the hop is gone, and with it
// the `wal.dist_append` / `wal.dist_consume` spans (docs/tracing.md: they appear exactly when
// an append or a read crossed the network).
//
// This is the client's side of the hop; the node implements it over its WALs
// (streaming/node/local_wal_transport.h), so the client library links no WAL code.
//
// Thread-safety: implementations are called from any client thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "client/delivery_stream.h"
#include "client/router.h"
#include "kingfisher/producer.h"
#include "kingfisher/v1/streaming.pb.h"
#include "message/message.h"
#include "trace/context.h"

namespace kf::client {

using AppendDone = absl::AnyInvocable<void(absl::StatusOr<kingfisher::AppendResult>) &&>;

// One pchannel served in this process.
class LocalPChannel {
 public:
  virtual ~LocalPChannel() = default;

  // Appends `msg` as the node's Produce handler would (validated, then the WAL); `done` runs
  // once, on a WAL thread (it must only hand the result on).
  virtual void Append(const trace::Context& ctx, MutableMessage msg, AppendDone done) = 0;
  // A reader as the node's Consume handler would open one for `create`; errors as Consume's.
  virtual absl::StatusOr<std::unique_ptr<DeliveryStream>> Read(
      Router::Route route, const kingfisher::v1::ConsumeRequest::Create& create) = 0;
};

// The pchannel served in this process at `term`, or null (the client then goes remote).
using LocalTransport =
    std::function<std::shared_ptr<LocalPChannel>(const std::string& pchannel, int64_t term)>;

}  // namespace kf::client
