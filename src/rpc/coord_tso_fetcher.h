// CoordTsoFetcher: a streaming node's TimestampBatchFetcher over the coordinator's
// StreamingCoord.AllocateTimestamps, at the address the coordinator published (`coord` key,
// followed by the node's AssignmentView). A new coordinator is picked up on the next fetch.
//
// Thread-safety: thread-safe. Ownership: borrows the view, which must outlive the fetcher.
// Errors: UNAVAILABLE when no coordinator is known or it cannot be reached (nothing was handed
// out), the coordinator's own errors otherwise.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "streaming/assignment_view.h"
#include "streaming/node/batched_timestamp_source.h"
#include "wire/credentials.h"

namespace kf::rpc {

class CoordTsoFetcher final : public streaming::TimestampBatchFetcher {
 public:
  // `credentials` (wire/credentials.h) null: plaintext.
  explicit CoordTsoFetcher(const streaming::AssignmentView* view,
                           std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr)
      : view_(view), credentials_(wire::OrPlaintext(std::move(credentials))) {}

  absl::StatusOr<Batch> Fetch(uint32_t count, TimeTick at_least, absl::Time deadline) override;

 private:
  const streaming::AssignmentView* const view_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  absl::Mutex mu_;
  std::string address_ ABSL_GUARDED_BY(mu_);
  // Shared with the calls in flight, so replacing it (a new coordinator) never pulls it from
  // under one.
  std::shared_ptr<kingfisher::v1::StreamingCoord::Stub> stub_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::rpc
