// StreamingNodeService: the StreamingNode gRPC service (Produce / Consume bidi streams) over a
// WalRegistry, shared by the standalone server and the distributed streaming node.
//
// Served on the CompletionLoop (async API): a waiting ack holds no thread (ProduceStream); a
// consumer reads the backend on a thread of its own and tails the write-ahead buffer on a
// shared pump thread (ConsumeStream). Both are registered as raw (ByteBuffer) methods: an
// undecodable produce request gets an INVALID_ARGUMENT response instead of killing the stream, and
// a consumed batch shares each message's encoding across consumers; the wire protocol is unchanged.
//
// Thread-safety: thread-safe. Ownership: borrows the registry (must outlive the service and
// every stream; i.e. the grpc::Server). Errors: per docs/semantics.md §3, on the wire (see
// status_convert.h).
#pragma once

#include "absl/time/time.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "rpc/completion_loop.h"
#include "rpc/node_options.h"
#include "rpc/rpc_metrics.h"
#include "rpc/stream_tracker.h"
#include "rpc/task_threads.h"
#include "streaming/node/wal_registry.h"

namespace kf::rpc {

using streaming::node::WalRegistry;

class StreamingNodeService final : public kingfisher::v1::StreamingNode::WithRawMethod_Produce<
                                       kingfisher::v1::StreamingNode::WithRawMethod_Consume<
                                           kingfisher::v1::StreamingNode::Service>> {
 public:
  StreamingNodeService(const WalRegistry* registry, StreamingNodeOptions options);

  // Arms the service's methods on `loop` (after the server started).
  void Serve(CompletionLoop* loop);

  // Graceful shutdown, step 1: new streams and new appends fail with ON_SHUTDOWN; in-flight
  // appends complete and their acks are written, then each Produce stream finishes with
  // ON_SHUTDOWN; consumers end at once with ON_SHUTDOWN. Does not wait: grpc::Server::Shutdown
  // waits for the streams to finish. Idempotent.
  void BeginShutdown();

  // Graceful shutdown, step 2: waits until every stream finished (acks written, final status
  // sent) or `deadline` passed. True when all finished.
  bool WaitForStreams(absl::Time deadline);

 private:
  const WalRegistry* const registry_;
  const StreamingNodeOptions options_;
  RpcMetrics metrics_;
  StreamTracker tracker_;
  // Tailing consumers' pumps (ConsumeStream). Destroyed before tracker_: by then every
  // stream is done (the grpc::Server outlives no service it serves).
  TaskThreads pumps_;
};

}  // namespace kf::rpc
