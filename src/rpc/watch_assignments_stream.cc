#include "rpc/watch_assignments_stream.h"

#include <utility>

namespace kf::rpc {

std::shared_ptr<WatchAssignmentsStream> WatchAssignmentsStream::Create(
    Call* call, std::function<void(WatchAssignmentsStream*)> on_done) {
  std::shared_ptr<WatchAssignmentsStream> stream(
      new WatchAssignmentsStream(call, std::move(on_done)));
  stream->self_ = stream;
  return stream;
}

WatchAssignmentsStream::WatchAssignmentsStream(Call* call,
                                               std::function<void(WatchAssignmentsStream*)> on_done)
    : WriteReactor(call), on_done_(std::move(on_done)) {}

void WatchAssignmentsStream::Offer(Snapshot snapshot) {
  const kingfisher::v1::AssignmentSnapshot* write = nullptr;
  {
    absl::MutexLock l(&mu_);
    if (ending_ || snapshot->version() <= offered_version_) return;
    offered_version_ = snapshot->version();
    if (in_flight_ != nullptr) {
      pending_ = std::move(snapshot);  // replaces an older pending one
      return;
    }
    in_flight_ = std::move(snapshot);
    // Stays alive until OnWriteDone, which cannot run before this write starts.
    write = in_flight_.get();
  }
  StartWrite(write);
}

void WatchAssignmentsStream::End(grpc::Status status) {
  {
    absl::MutexLock l(&mu_);
    if (ending_) return;
    ending_ = true;
    end_status_ = status;
    pending_.reset();
    if (!TakeFinishLocked()) return;  // OnWriteDone finishes
  }
  Finish(status);
}

bool WatchAssignmentsStream::TakeFinishLocked() {
  if (!ending_ || in_flight_ != nullptr || finish_issued_) return false;
  finish_issued_ = true;
  return true;
}

void WatchAssignmentsStream::OnWriteDone(bool ok) {
  const kingfisher::v1::AssignmentSnapshot* next = nullptr;
  bool finish = false;
  grpc::Status status;
  {
    absl::MutexLock l(&mu_);
    if (!ok && !ending_) {  // the client is gone
      ending_ = true;
      end_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "watch stream write failed");
      pending_.reset();
    }
    in_flight_ = std::move(pending_);
    pending_.reset();
    if (ending_) in_flight_.reset();
    next = in_flight_.get();
    finish = TakeFinishLocked();
    if (finish) status = end_status_;
  }
  if (next != nullptr) StartWrite(next);
  if (finish) Finish(status);
}

void WatchAssignmentsStream::OnCancel() {
  End(grpc::Status(grpc::StatusCode::CANCELLED, "watch stream cancelled"));
}

void WatchAssignmentsStream::OnDone() {
  if (on_done_) on_done_(this);
  // The last statement: may delete this stream (unless an Offer holds a reference).
  std::shared_ptr<WatchAssignmentsStream> keep = std::move(self_);
}

}  // namespace kf::rpc
