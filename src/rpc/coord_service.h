// CoordService: the StreamingCoord gRPC service (on the CompletionLoop), served by the coordinator
// and, with its own AssignmentView and no oracle, by every streaming node (docs/cluster.md,
// coordinator 6 and node 6).
//
//   GetStatus           nodes and pchannels of the current AssignmentSnapshot, with reader
//                       counts from the WalRegistry when one is given (without a view: the
//                       standalone single-node status, see CoordServiceOptions).
//   WatchAssignments    the current AssignmentSnapshot at once, then each newer one. One
//                       fan-out thread per service waits on the view and offers each new
//                       version (converted to proto once) to every stream; a stream writes the
//                       newest it was offered whenever its previous write completed, so no
//                       stream holds a thread or a queue. Ends with ON_SHUTDOWN (UNAVAILABLE)
//                       at server shutdown, CANCELLED when the client leaves. Without a view:
//                       UNAVAILABLE.
//   AllocateTimestamps  from the oracle; without one, or while it refuses (not the acting
//                       coordinator, deposed), UNAVAILABLE "not the coordinator" so the caller
//                       retries (elsewhere). Served on the CompletionLoop from memory; a call
//                       that needs the oracle's mark raised first (once per window, one store
//                       call: a local file in standalone, etcd for the coordinator) waits in an
//                       OracleRaiseQueue, so the process's other calls do not wait for the
//                       store.
//
// Thread-safety: thread-safe. Ownership: borrows everything in the options (must outlive the
// grpc::Server); owns the fan-out thread and the raise queue (both stopped by BeginShutdown or
// the destructor).
// Errors: docs/semantics.md §3 statuses on the wire (status_convert.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/hybrid_time.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "rpc/async_stream.h"
#include "rpc/async_unary.h"
#include "rpc/completion_loop.h"
#include "rpc/coord_service_options.h"
#include "rpc/oracle_raise_queue.h"
#include "rpc/watch_assignments_stream.h"
#include "streaming/assignment_view.h"

namespace kf::rpc {

class CoordService final : public kingfisher::v1::StreamingCoord::AsyncService {
 public:
  explicit CoordService(CoordServiceOptions options);
  ~CoordService() override;

  // Arms the service's methods on `loop` (after the server started).
  void Serve(CompletionLoop* loop);

  void HandleGetStatus(grpc::ServerContext* context,
                       const kingfisher::v1::GetStatusRequest* request,
                       kingfisher::v1::GetStatusResponse* response, UnaryReactor* reactor);
  StreamReactor* HandleWatchAssignments(
      StreamOps<kingfisher::v1::WatchAssignmentsRequest, kingfisher::v1::AssignmentSnapshot>* call);
  void HandleAllocateTimestamps(grpc::ServerContext* context,
                                const kingfisher::v1::AllocateTimestampsRequest* request,
                                kingfisher::v1::AllocateTimestampsResponse* response,
                                UnaryReactor* reactor);

  // Shutdown, step 1: new watch streams are refused and live ones end with ON_SHUTDOWN after
  // their write in flight; the fan-out thread stops; allocations waiting for a raise are
  // answered ON_SHUTDOWN, and the one in flight is waited for (its store calls end by its
  // deadline or the oracle's call timeout). Idempotent.
  void BeginShutdown();
  // Step 2: waits until every watch stream is done or the deadline passes; true when none is
  // left.
  bool WaitForStreams(absl::Time deadline);

 private:
  // The reply to a request for `count` timestamps, for the oracle's answer `first`: refusals become
  // UNAVAILABLE "not the coordinator" (retryable elsewhere), a mark that did not rise in time
  // UNAVAILABLE "timestamps unavailable", anything else is returned as it is.
  static absl::Status Answer(const absl::StatusOr<TimeTick>& first, uint32_t count,
                             kingfisher::v1::AllocateTimestampsResponse* response);
  // The wire form of `s`, converted once per version (streams share it).
  WatchAssignmentsStream::Snapshot ToProto(
      const std::shared_ptr<const streaming::AssignmentSnapshot>& s);
  void FanOut(std::stop_token stop);

  const CoordServiceOptions options_;

  absl::Mutex mu_;

  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<WatchAssignmentsStream*, std::weak_ptr<WatchAssignmentsStream>> streams_
      ABSL_GUARDED_BY(mu_);
  WatchAssignmentsStream::Snapshot latest_ ABSL_GUARDED_BY(mu_);  // cache of ToProto

  std::jthread fan_out_;

  // The AllocateTimestamps calls that wait for the oracle to raise its mark (null without an
  // oracle). Last: its thread is joined before the members it uses die.
  std::unique_ptr<OracleRaiseQueue> raises_;
};

}  // namespace kf::rpc
