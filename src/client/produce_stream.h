// ProduceStream: one StreamingNode.Produce bidirectional stream to one pchannel. Send queues an
// encoded message; the stream coalesces what is queued into batched ProduceRequests (at most
// `max_inflight_requests` awaiting answers, no linger timer), and a reader thread hands every
// response (and finally the stream's end status) to its owner.
//
// Thread-safety: Send and Cancel are thread-safe. Writes are serialised: whoever finds the
// stream idle writes (the sender, or the reader thread after an answer made room), the others
// only queue. Handlers run on the reader thread, one at a time, in arrival order.
// Ownership: owned by ProducerImpl (shared_ptr); Join must be called from another thread before
// destruction.
// Errors: Send returns false once the stream is broken; a message queued before that is never
// answered, and the reader reports the end status (UNAVAILABLE for transport loss, or the
// server's stream-level error) through on_broken.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "client/router.h"
#include "grpcpp/client_context.h"
#include "kingfisher/producer.h"
#include "kingfisher/v1/streaming.grpc.pb.h"

namespace kf::client {

class ProduceStream {
 public:
  using ResponseHandler =
      std::function<void(ProduceStream*, const kingfisher::v1::ProduceResponse&)>;
  using BrokenHandler = std::function<void(ProduceStream*, const absl::Status&)>;

  // A stream to the node `route` names (kept alive by the stream).
  ProduceStream(std::string pchannel, Router::Route route, kingfisher::BatchingOptions batching,
                ResponseHandler on_response, BrokenHandler on_broken);
  ~ProduceStream();

  const std::string& pchannel() const { return pchannel_; }
  const Router::Route& route() const { return route_; }
  // Queues `message` (an encoded kingfisher.v1.Message) as entry `id` (unique on the stream)
  // and sends it now or with the next request. False when the stream is already broken.
  bool Send(uint64_t id, std::string message);
  void Cancel() { context_.TryCancel(); }
  // True once the reader thread has returned (Join is then immediate).
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // True once the call is over (set before the broken handler runs): nothing written to it
  // will be answered. The broken handler may run before the stream is published anywhere, so
  // whoever holds a stream must check this rather than rely on the handler alone.
  bool broken() const { return broken_.load(std::memory_order_acquire); }
  // Set by the owner once it has taken back every message the stream will not answer.
  void MarkFailuresReported() { failures_reported_.store(true, std::memory_order_release); }
  bool failures_reported() const { return failures_reported_.load(std::memory_order_acquire); }
  bool IsReaderThread() const { return std::this_thread::get_id() == reader_id_; }
  void Join();

 private:
  struct Entry {
    uint64_t id;
    std::string message;
  };

  // Writes requests while there is something queued and room in flight; only one thread at a
  // time (the one that set writing_).
  void Flush();
  // Counts the answers of `resp` against their requests; true when the caller must Flush (it
  // then holds writing_).
  bool Answered(const kingfisher::v1::ProduceResponse& resp);
  void ReadLoop();

  const std::string pchannel_;
  const Router::Route route_;
  const kingfisher::BatchingOptions batching_;
  grpc::ClientContext context_;
  std::unique_ptr<
      grpc::ClientReaderWriter<kingfisher::v1::ProduceRequest, kingfisher::v1::ProduceResponse>>
      rw_;
  ResponseHandler on_response_;
  BrokenHandler on_broken_;

  absl::Mutex mu_;
  std::deque<Entry> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;  // a thread is in Flush
  int inflight_requests_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_request_ ABSL_GUARDED_BY(mu_) = 0;
  // Unanswered entries by id -> their request; unanswered entries per request.
  absl::flat_hash_map<uint64_t, uint64_t> request_of_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, size_t> unanswered_ ABSL_GUARDED_BY(mu_);

  absl::Mutex write_mu_;  // never held with mu_
  bool write_closed_ ABSL_GUARDED_BY(write_mu_) = false;
  std::atomic<bool> finished_{false};
  std::atomic<bool> broken_{false};
  std::atomic<bool> failures_reported_{false};
  std::thread reader_;
  std::thread::id reader_id_;
};

}  // namespace kf::client
