// ProduceStream: the server side of one StreamingNode.Produce bidi stream (a BidiReactor on the
// CompletionLoop).
//
// Each request is a batch of entries for one pchannel. Every entry is decoded, validated
// (ValidateProducedMessage) and routed on its own; those that pass go to their Wal in one
// AppendBatch, each under the trace context carried in its `_tc` (the client's
// wal.dist_append span). Results go out in completion order, each with its entry's id; what
// completes while a write is in flight is concatenated into the next response (one
// outstanding StartWrite), and the results of one request wait for its last append, so that a
// request whose appends complete together is answered in one response. A bad entry is answered with
// its own INVALID_ARGUMENT result while the rest of its request is appended; the stream keeps
// working. A waiting ack holds no thread.
//
// Raw (ByteBuffer) method: the handler parses requests itself, so that an undecodable request
// is answered instead of tearing the stream down.
//
// Thread-safety: reactions run on the CompletionLoop, Wal completions on the loop or the WAL's
// threads; state is guarded by mu_. Ownership: self-owned (self_) until OnDone; each in-flight
// append holds a reference, so a completion never touches a freed stream. Shutdown
// (OnServerShutdown): later requests get ON_SHUTDOWN responses; the stream finishes with
// ON_SHUTDOWN once every in-flight append has completed and its ack was written.
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "kingfisher/v1/streaming.pb.h"
#include "rpc/async_stream.h"
#include "rpc/node_options.h"
#include "rpc/rpc_metrics.h"
#include "rpc/stream_tracker.h"
#include "streaming/node/wal_registry.h"

namespace kf::rpc {

using streaming::node::WalRegistry;

class ProduceStream final : public ByteBidiReactor,
                            public ShutdownAware,
                            public std::enable_shared_from_this<ProduceStream> {
 public:
  // Creates the reactor of `call`, starts reading and returns it. All pointers are borrowed
  // and must outlive the stream (they belong to the service).
  static ByteBidiReactor* Start(ByteStreamOps* call, const WalRegistry* registry,
                                const StreamingNodeOptions* options, StreamTracker* tracker,
                                RpcMetrics* metrics);

  ProduceStream(ByteStreamOps* call, const WalRegistry* registry,
                const StreamingNodeOptions* options, StreamTracker* tracker, RpcMetrics* metrics);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;
  void OnServerShutdown() override;

 private:
  // What to do after releasing mu_.
  struct Actions {
    bool start_read = false;
    bool start_write = false;
    bool finish = false;
    grpc::Status finish_status;
  };

  // The appends of one request not completed yet (guarded by mu_ once they are submitted).
  struct RequestAcks {
    size_t left = 0;
  };

  void HandleRequest();
  void OnAppendDone(uint64_t id, Term term, absl::StatusOr<wal::AppendResult> result,
                    RequestAcks& acks);
  // Queues `response` (if it has results) after `appends_completed` appends finished; those of
  // `acks`'s request when it is given. What is queued is written once a request has all its
  // results, or at once for results of no request (refusals).
  void Respond(kingfisher::v1::ProduceResponse response, size_t appends_completed,
               RequestAcks* acks = nullptr);
  void MaybeWriteOrFinishLocked(Actions* a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Run(Actions a);

  const WalRegistry* const registry_;
  const StreamingNodeOptions* const options_;
  StreamTracker* const tracker_;
  RpcMetrics* const metrics_;

  // Only touched by the read path (gRPC serialises reads).
  grpc::ByteBuffer read_buf_;

  absl::Mutex mu_;
  std::shared_ptr<ProduceStream> self_ ABSL_GUARDED_BY(mu_);
  std::string pending_ ABSL_GUARDED_BY(mu_);  // serialized ProduceResponses, concatenated
  bool ready_ ABSL_GUARDED_BY(mu_) = false;   // pending_ holds results that should go out now
  grpc::ByteBuffer writing_ ABSL_GUARDED_BY(mu_);
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  size_t inflight_appends_ ABSL_GUARDED_BY(mu_) = 0;
  bool read_paused_ ABSL_GUARDED_BY(mu_) = false;  // at the in-flight limit
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;   // client half-closed or the read failed
  bool broken_ ABSL_GUARDED_BY(mu_) = false;       // cancelled or a write failed
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kf::rpc
