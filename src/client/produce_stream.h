// ProduceStream: one StreamingNode.Produce bidirectional stream to one pchannel, with a reader
// thread that hands every response (and finally the stream's end status) to its owner.
//
// Thread-safety: Write is thread-safe (serialised by an internal mutex); Cancel is thread-safe.
// Handlers run on the reader thread, one at a time, in arrival order.
// Ownership: owned by ProducerImpl (shared_ptr); Join must be called from another thread before
// destruction.
// Errors: Write returns false once the stream is broken; the reader then reports the end status
// (UNAVAILABLE for transport loss, or the server's stream-level error) through on_broken.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "client/router.h"
#include "grpcpp/client_context.h"
#include "kingfisher/v1/streaming.grpc.pb.h"

namespace kf::client {

class ProduceStream {
 public:
  using ResponseHandler =
      std::function<void(ProduceStream*, const kingfisher::v1::ProduceResponse&)>;
  using BrokenHandler = std::function<void(ProduceStream*, const absl::Status&)>;

  // A stream to the node `route` names (kept alive by the stream).
  ProduceStream(std::string pchannel, Router::Route route, ResponseHandler on_response,
                BrokenHandler on_broken);
  ~ProduceStream();

  const std::string& pchannel() const { return pchannel_; }
  const Router::Route& route() const { return route_; }
  bool Write(const kingfisher::v1::ProduceRequest& req);
  void Cancel() { context_.TryCancel(); }
  // True once the reader thread has returned (Join is then immediate).
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // True once the call is over (set before the broken handler runs): nothing written to it
  // will be answered. The broken handler may run before the stream is published anywhere, so
  // whoever holds a stream must check this rather than rely on the handler alone.
  bool broken() const { return broken_.load(std::memory_order_acquire); }
  bool IsReaderThread() const { return std::this_thread::get_id() == reader_id_; }
  void Join();

 private:
  void ReadLoop();

  const std::string pchannel_;
  const Router::Route route_;
  grpc::ClientContext context_;
  std::unique_ptr<
      grpc::ClientReaderWriter<kingfisher::v1::ProduceRequest, kingfisher::v1::ProduceResponse>>
      rw_;
  ResponseHandler on_response_;
  BrokenHandler on_broken_;
  absl::Mutex write_mu_;
  bool write_closed_ ABSL_GUARDED_BY(write_mu_) = false;
  std::atomic<bool> finished_{false};
  std::atomic<bool> broken_{false};
  std::thread reader_;
  std::thread::id reader_id_;
};

}  // namespace kf::client
