// WatchAssignmentsStream: the server side of one StreamingCoord.WatchAssignments stream
// (a WriteReactor on the CompletionLoop, server streaming).
//
// The service offers it AssignmentSnapshot protos (shared, immutable) as the view changes;
// the stream writes one at a time and, when several arrive during a write, only the newest
// (a client needs the latest assignment, not the history), so a slow client costs one pending
// snapshot, never a queue. Versions only grow on the wire. End (service shutdown) and
// cancellation finish the stream once the write in flight completes.
//
// Thread-safety: Offer/End from any thread, concurrently with gRPC reactions; state under mu_.
// Ownership: shared. The stream holds a reference to itself until OnDone, the service holds
// weak ones, so an Offer racing OnDone finds either a live stream that ignores it or nothing.
// Reactor methods are never called after OnDone. Errors: none of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "kingfisher/v1/streaming.pb.h"
#include "rpc/async_stream.h"

namespace kf::rpc {

class WatchAssignmentsStream final : public WriteReactor<kingfisher::v1::WatchAssignmentsRequest,
                                                         kingfisher::v1::AssignmentSnapshot> {
 public:
  using Snapshot = std::shared_ptr<const kingfisher::v1::AssignmentSnapshot>;

  // `on_done` runs in OnDone (e.g. to unregister from the service), before the stream drops
  // its own reference.
  using Call =
      StreamOps<kingfisher::v1::WatchAssignmentsRequest, kingfisher::v1::AssignmentSnapshot>;
  static std::shared_ptr<WatchAssignmentsStream> Create(
      Call* call, std::function<void(WatchAssignmentsStream*)> on_done);

  // Writes `snapshot` unless one at least as new was offered already.
  void Offer(Snapshot snapshot);
  // Finishes the stream with `status` after the write in flight. The first End wins.
  void End(grpc::Status status);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  WatchAssignmentsStream(Call* call, std::function<void(WatchAssignmentsStream*)> on_done);

  // REQUIRES: mu_ held. True when the caller must call Finish(end_status_) after unlocking.
  bool TakeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::function<void(WatchAssignmentsStream*)> on_done_;
  std::shared_ptr<WatchAssignmentsStream> self_;  // released in OnDone

  absl::Mutex mu_;
  Snapshot in_flight_ ABSL_GUARDED_BY(mu_);  // being written (gRPC reads it until OnWriteDone)
  Snapshot pending_ ABSL_GUARDED_BY(mu_);    // the newest not yet written
  int64_t offered_version_ ABSL_GUARDED_BY(mu_) = -1;
  bool ending_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_issued_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status end_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::rpc
