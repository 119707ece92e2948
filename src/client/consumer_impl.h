// ConsumerImpl: the Consumer of include/kingfisher/consumer.h over StreamingNode.Consume.
//
// Resume rule: the stream is only replaced once its queue is drained, and the new stream starts
// strictly after the last message Next returned (the original policy when nothing was returned
// yet); messages at or below that id are dropped as a guard against a server that replays.
//
// Thread-safety: Next from one thread at a time; Close from any thread. Ownership: owns its
// stream (and that stream's reader thread).
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "client/consume_stream.h"
#include "client/in_process.h"
#include "client/retry.h"
#include "grpcpp/channel.h"
#include "kingfisher/client.h"
#include "kingfisher/consumer.h"
#include "kingfisher/v1/streaming.grpc.pb.h"

namespace kf::client {

class ConsumerImpl final : public kingfisher::Consumer {
 public:
  // `local` (may be empty) is the in-process fast path (in_process.h).
  ConsumerImpl(std::shared_ptr<Router> router, LocalWalLookup local,
               kingfisher::ClientOptions client_options, kingfisher::ConsumerOptions options,
               std::string pchannel);
  ~ConsumerImpl() override;

  absl::StatusOr<kingfisher::ConsumedMessage> Next(absl::Time deadline) override;
  void Close() override;

 private:
  kingfisher::v1::ConsumeRequest CreateRequest() const;
  // Records the resume point; over the network also opens `wal.dist_consume`.
  void Deliver(kingfisher::ConsumedMessage* m, bool remote);
  // A stream on `route`: the local Wal's scanner when this process serves it, else gRPC.
  absl::StatusOr<std::shared_ptr<DeliveryStream>> OpenStream(Router::Route route);

  const std::shared_ptr<Router> router_;
  const LocalWalLookup local_;
  const kingfisher::ClientOptions client_options_;
  const kingfisher::ConsumerOptions options_;
  const std::string pchannel_;
  Backoff backoff_;
  absl::Time reconnect_at_ = absl::InfinitePast();
  // Resolve from an assignment newer than this (set after a routing error).
  int64_t stale_version_ = 0;
  absl::Status sticky_;
  MessageId last_delivered_;  // invalid until a message with an id was returned
  // Where a reconnect resumes (docs/semantics.md §1): from the last delivered message's LCMID,
  // keeping only what is later than its timetick, so a txn begun before it and committed after it
  // is whole.
  MessageId resume_from_;
  TimeTick resume_after_tt_;

  absl::Mutex mu_;  // guards stream_ replacement against Close
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<DeliveryStream> stream_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::client
