// DeliveryStream: what a Consumer reads from — a Consume stream to a node (ConsumeStream) or,
// on the in-process fast path, a local reader (local_transport.h).
//
// Thread-safety: WaitFor, Pop and status are called by one thread at a time (the consumer's
// Next); Cancel may be called from any thread and wakes a blocked WaitFor.
#pragma once

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/router.h"
#include "kingfisher/consumer.h"

namespace kf::client {

class DeliveryStream {
 public:
  virtual ~DeliveryStream() = default;

  enum class Wait { kMessage, kEnded, kDeadline, kCancelled };
  // Waits until a message is ready (kMessage, even if the stream ended after it), the stream
  // ended with nothing left (kEnded), Cancel was called (kCancelled) or `deadline` passed.
  virtual Wait WaitFor(absl::Time deadline) = 0;
  // The next message; REQUIRES: WaitFor returned kMessage.
  virtual kingfisher::ConsumedMessage Pop() = 0;
  // The end status; meaningful once WaitFor returned kEnded.
  virtual absl::Status status() const = 0;
  virtual void Cancel() = 0;

  virtual const Router::Route& route() const = 0;
  // True when messages crossed the network (the consumer then opens `wal.dist_consume`).
  virtual bool remote() const = 0;
};

}  // namespace kf::client
