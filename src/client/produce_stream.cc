#include "client/produce_stream.h"

#include <pthread.h>

#include <utility>

#include "wire/status_convert.h"

namespace kf::client {

ProduceStream::ProduceStream(std::string pchannel, Router::Route route, ResponseHandler on_response,
                             BrokenHandler on_broken)
    : pchannel_(std::move(pchannel)),
      route_(std::move(route)),
      on_response_(std::move(on_response)),
      on_broken_(std::move(on_broken)) {
  rw_ = route_.node->stub->Produce(&context_);
  reader_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "kf-produce-read");
    ReadLoop();
  });
  reader_id_ = reader_.get_id();
}

ProduceStream::~ProduceStream() {
  Cancel();
  Join();
}

bool ProduceStream::Write(const kingfisher::v1::ProduceRequest& req) {
  absl::MutexLock l(&write_mu_);
  if (write_closed_) return false;
  return rw_->Write(req);
}

void ProduceStream::Join() {
  if (reader_.joinable() && !IsReaderThread()) reader_.join();
}

void ProduceStream::ReadLoop() {
  kingfisher::v1::ProduceResponse resp;
  while (rw_->Read(&resp)) on_response_(this, resp);
  // Read failed: the call is over. Finish must not race a Write.
  grpc::Status st;
  {
    absl::MutexLock l(&write_mu_);
    write_closed_ = true;
    st = rw_->Finish();
  }
  broken_.store(true, std::memory_order_release);
  absl::Status s = kf::wire::FromGrpcStatus(st);
  if (s.ok() || s.code() == absl::StatusCode::kCancelled) {
    s = absl::UnavailableError(st.ok() ? "produce stream closed by the server"
                                       : "produce stream reset: " + st.error_message());
  }
  on_broken_(this, s);
  finished_.store(true, std::memory_order_release);
}

}  // namespace kf::client
