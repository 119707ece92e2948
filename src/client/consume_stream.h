// ConsumeStream: one StreamingNode.Consume stream, driven by the consumer's own thread.
//
// The call runs on the gRPC async API with a completion queue of its own, and WaitFor polls
// that queue: a delivered batch wakes the thread that waits for it, directly, instead of a
// reader thread that would then have to wake it (one context switch per delivery, not two; with
// many consumers per process that is most of the client's CPU). One Read is outstanding while
// fewer than `capacity` messages are queued; beyond that, back-pressure is gRPC flow control.
//
// Thread-safety: WaitFor, Pop and status are called by one thread at a time (the consumer's
// Next); Cancel may be called from any thread and wakes a blocked WaitFor. Ownership: owned by
// ConsumerImpl; the destructor cancels the call and drains its completion queue.
// Errors: once the stream ends, status() is its end status: the server's terminal Error, a
// message that does not decode (DATA_LOSS), or UNAVAILABLE for a transport failure / a stream
// the server closed.
#pragma once

#include <atomic>
#include <deque>
#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/delivery_stream.h"
#include "client/router.h"
#include "grpcpp/client_context.h"
#include "grpcpp/completion_queue.h"
#include "kingfisher/consumer.h"
#include "kingfisher/v1/streaming.grpc.pb.h"

namespace kf::client {

class ConsumeStream final : public DeliveryStream {
 public:
  // A stream to the node `route` names (kept alive by the stream); `create` gets its term.
  ConsumeStream(Router::Route route, kingfisher::v1::ConsumeRequest create, size_t capacity);
  ~ConsumeStream() override;

  Wait WaitFor(absl::Time deadline) override;
  kingfisher::ConsumedMessage Pop() override;  // the oldest queued message
  absl::Status status() const override { return status_; }
  void Cancel() override;
  const Router::Route& route() const override { return route_; }
  bool remote() const override { return true; }

 private:
  // Completion-queue tags: the operations that can be outstanding.
  enum Op : intptr_t { kStart = 1, kWrite, kRead, kFinish };

  // Applies one completion and starts what follows from it.
  void Handle(Op op, bool ok);
  // Queues the messages of a response or records its terminal error.
  void Receive();
  void StartRead();
  void StartFinish();
  static void* Tag(Op op) { return reinterpret_cast<void*>(static_cast<intptr_t>(op)); }

  const Router::Route route_;
  grpc::ClientContext context_;
  grpc::CompletionQueue cq_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<kingfisher::v1::ConsumeRequest,
                                                kingfisher::v1::ConsumeResponse>>
      rw_;
  kingfisher::v1::ConsumeRequest create_;
  const size_t capacity_;
  std::atomic<bool> cancelled_{false};

  // Owned by the polling thread (see thread-safety above).
  kingfisher::v1::ConsumeResponse response_;
  grpc::Status grpc_status_;
  std::deque<kingfisher::ConsumedMessage> queue_;
  int outstanding_ = 0;        // operations started and not completed
  bool read_pending_ = false;  // a Read is outstanding
  bool reading_ = true;        // more Reads may follow (no error, no end)
  bool finishing_ = false;     // Finish was started
  bool ended_ = false;         // Finish completed: status_ is final
  absl::Status end_;           // first error seen before Finish (server Error, bad message)
  absl::Status status_;
};

// Decodes one delivered message (and its inner messages), moving the payloads and property
// values out of `m`. DATA_LOSS for a bad message id.
absl::StatusOr<kingfisher::ConsumedMessage> DecodeConsumed(kingfisher::v1::ConsumedMessage* m);

}  // namespace kf::client
