// ConsumeStream: one StreamingNode.Consume stream with a reader thread that decodes delivered
// messages into a bounded queue (back-pressure beyond it is gRPC flow control).
//
// Thread-safety: all methods are thread-safe. Ownership: owned by ConsumerImpl; the destructor
// cancels the call and joins the reader.
// Errors: once the stream ends, status() is its end status: the server's terminal Error, a
// message that does not decode (DATA_LOSS), or UNAVAILABLE for a transport failure / a stream
// the server closed.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "kingfisher/consumer.h"
#include "kingfisher/v1/streaming.grpc.pb.h"

namespace kf::client {

class ConsumeStream {
 public:
  ConsumeStream(kingfisher::v1::StreamingNode::Stub* stub,
                const kingfisher::v1::ConsumeRequest& create, size_t capacity);
  ~ConsumeStream();

  enum class Wait { kMessage, kEnded, kDeadline, kCancelled };
  // Waits until a message is queued (kMessage, even if the stream ended after it), the stream
  // ended with an empty queue (kEnded), Cancel was called (kCancelled) or `deadline` passed.
  Wait WaitFor(absl::Time deadline);
  // The oldest queued message; REQUIRES: WaitFor returned kMessage.
  kingfisher::ConsumedMessage Pop();
  absl::Status status();
  void Cancel();

 private:
  void ReadLoop(kingfisher::v1::ConsumeRequest create);
  // Decodes and queues a batch, waiting for room message by message; stops early on Cancel.
  absl::Status Enqueue(const kingfisher::v1::ConsumedBatch& batch);

  grpc::ClientContext context_;
  std::unique_ptr<
      grpc::ClientReaderWriter<kingfisher::v1::ConsumeRequest, kingfisher::v1::ConsumeResponse>>
      rw_;
  const size_t capacity_;
  absl::Mutex mu_;
  std::deque<kingfisher::ConsumedMessage> queue_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::thread reader_;
};

// Decodes one delivered message (and its inner messages). DATA_LOSS for a bad message id.
absl::StatusOr<kingfisher::ConsumedMessage> DecodeConsumed(
    const kingfisher::v1::ConsumedMessage& m);

}  // namespace kf::client
