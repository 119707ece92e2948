#include "client/produce_stream.h"

#include <pthread.h>

#include <utility>

#include "wire/status_convert.h"

namespace kf::client {

ProduceStream::ProduceStream(std::string pchannel, Router::Route route,
                             kingfisher::BatchingOptions batching, ResponseHandler on_response,
                             BrokenHandler on_broken)
    : pchannel_(std::move(pchannel)),
      route_(std::move(route)),
      batching_(batching),
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

bool ProduceStream::Send(uint64_t id, std::string message) {
  {
    absl::MutexLock l(&mu_);
    if (broken()) return false;
    queue_.push_back(Entry{id, std::move(message)});
    if (writing_ || inflight_requests_ >= batching_.max_inflight_requests) return true;
    writing_ = true;
  }
  Flush();
  return true;
}

void ProduceStream::Flush() {
  kingfisher::v1::ProduceRequest req;
  req.set_pchannel(pchannel_);
  req.set_term(route_.term);
  while (true) {
    req.clear_entries();
    {
      absl::MutexLock l(&mu_);
      if (queue_.empty() || inflight_requests_ >= batching_.max_inflight_requests) {
        writing_ = false;
        return;
      }
      const uint64_t request = next_request_++;
      size_t bytes = 0;
      while (!queue_.empty() && static_cast<size_t>(req.entries_size()) < batching_.max_messages) {
        Entry& e = queue_.front();
        if (req.entries_size() > 0 && bytes + e.message.size() > batching_.max_bytes) break;
        bytes += e.message.size();
        kingfisher::v1::ProduceEntry* out = req.add_entries();
        out->set_id(e.id);
        *out->mutable_message() = std::move(e.message);
        request_of_[e.id] = request;
        queue_.pop_front();
      }
      unanswered_[request] = static_cast<size_t>(req.entries_size());
      ++inflight_requests_;
    }
    bool written;
    {
      absl::MutexLock l(&write_mu_);
      written = !write_closed_ && rw_->Write(req);
    }
    if (!written) {
      // The call is over: the reader reports it, and the owner fails every entry it sent.
      absl::MutexLock l(&mu_);
      writing_ = false;
      return;
    }
  }
}

bool ProduceStream::Answered(const kingfisher::v1::ProduceResponse& resp) {
  absl::MutexLock l(&mu_);
  for (const kingfisher::v1::ProduceResult& r : resp.results()) {
    auto it = request_of_.find(r.id());
    if (it == request_of_.end()) continue;  // answered twice or never sent: not ours to count
    auto left = unanswered_.find(it->second);
    request_of_.erase(it);
    if (left != unanswered_.end() && --left->second == 0) {
      unanswered_.erase(left);
      --inflight_requests_;
    }
  }
  // Taken even with nothing queued: the callbacks of these results usually append again (a
  // producer's next message), and the reader's Flush after them sends all of that in one
  // request rather than the first alone and the rest once it is answered.
  if (writing_ || inflight_requests_ >= batching_.max_inflight_requests) return false;
  writing_ = true;
  return true;
}

void ProduceStream::Join() {
  if (reader_.joinable() && !IsReaderThread()) reader_.join();
}

void ProduceStream::ReadLoop() {
  kingfisher::v1::ProduceResponse resp;
  while (rw_->Read(&resp)) {
    // Counted before the owner sees them: whoever it answers may send at once.
    const bool flush = Answered(resp);
    on_response_(this, resp);
    if (flush) Flush();  // what queued meanwhile, callbacks' appends included
  }
  // Read failed: the call is over. Finish must not race a Write.
  grpc::Status st;
  {
    absl::MutexLock l(&write_mu_);
    write_closed_ = true;
    st = rw_->Finish();
  }
  {
    absl::MutexLock l(&mu_);
    broken_.store(true, std::memory_order_release);
    queue_.clear();  // the owner fails these with the rest of the stream's entries
  }
  absl::Status s = kf::wire::FromGrpcStatus(st);
  if (s.ok() || s.code() == absl::StatusCode::kCancelled) {
    s = absl::UnavailableError(st.ok() ? "produce stream closed by the server"
                                       : "produce stream reset: " + st.error_message());
  }
  on_broken_(this, s);
  finished_.store(true, std::memory_order_release);
}

}  // namespace kf::client
