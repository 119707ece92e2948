#include "client/consume_stream.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "client/wire.h"
#include "rpc/status_convert.h"

namespace kf::client {

absl::StatusOr<kingfisher::ConsumedMessage> DecodeConsumed(
    const kingfisher::v1::ConsumedMessage& m) {
  kingfisher::ConsumedMessage out;
  if (!m.message_id().empty()) {
    auto id = MessageId::Decode(m.message_id());
    if (!id.ok()) {
      return absl::DataLossError(
          absl::StrCat("undecodable message id in consume stream: ", id.status().message()));
    }
    out.id = *id;
  }
  MutableMessage msg = FromWire(m.message());
  out.type = msg.type();
  out.timetick = msg.timetick().value_or(TimeTick(0));
  if (auto lc = msg.last_confirmed()) {
    out.last_confirmed = *lc;
  } else if (msg.last_confirmed_is_self()) {
    out.last_confirmed = out.id;
  }
  out.vchannel = std::string(msg.vchannel());
  out.payload = std::move(*msg.mutable_payload());
  out.properties = msg.properties();
  for (const auto& inner : m.inner()) {
    auto in = DecodeConsumed(inner);
    if (!in.ok()) return in.status();
    out.messages.push_back(*std::move(in));
  }
  return out;
}

ConsumeStream::ConsumeStream(kingfisher::v1::StreamingNode::Stub* stub,
                             const kingfisher::v1::ConsumeRequest& create, size_t capacity)
    : capacity_(capacity == 0 ? 1 : capacity) {
  rw_ = stub->Consume(&context_);
  reader_ = std::thread([this, create] { ReadLoop(create); });
}

ConsumeStream::~ConsumeStream() {
  Cancel();
  if (reader_.joinable()) reader_.join();
}

void ConsumeStream::Cancel() {
  {
    absl::MutexLock l(&mu_);
    cancelled_ = true;
  }
  context_.TryCancel();
}

ConsumeStream::Wait ConsumeStream::WaitFor(absl::Time deadline) {
  absl::MutexLock l(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || ended_ || cancelled_;
  };
  mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  if (!queue_.empty()) return Wait::kMessage;
  if (cancelled_) return Wait::kCancelled;
  if (ended_) return Wait::kEnded;
  return Wait::kDeadline;
}

kingfisher::ConsumedMessage ConsumeStream::Pop() {
  absl::MutexLock l(&mu_);
  kingfisher::ConsumedMessage m = std::move(queue_.front());
  queue_.pop_front();
  return m;
}

absl::Status ConsumeStream::status() {
  absl::MutexLock l(&mu_);
  return status_;
}

absl::Status ConsumeStream::Enqueue(const kingfisher::v1::ConsumedBatch& batch) {
  for (const kingfisher::v1::ConsumedMessage& wire : batch.messages()) {
    absl::StatusOr<kingfisher::ConsumedMessage> m = DecodeConsumed(wire);
    if (!m.ok()) return m.status();
    absl::MutexLock l(&mu_);
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return queue_.size() < capacity_ || cancelled_;
    };
    mu_.Await(absl::Condition(&room));
    if (cancelled_) break;
    queue_.push_back(*std::move(m));
  }
  return absl::OkStatus();
}

void ConsumeStream::ReadLoop(kingfisher::v1::ConsumeRequest create) {
  absl::Status end;
  bool call_over = true;  // Read failed: the status is in; otherwise we end the call ourselves
  if (rw_->Write(create)) {
    kingfisher::v1::ConsumeResponse resp;
    while (true) {
      if (!end.ok()) {
        call_over = false;
        break;
      }
      if (!rw_->Read(&resp)) break;
      switch (resp.response_case()) {
        case kingfisher::v1::ConsumeResponse::kError:
          end = rpc::FromProtoError(resp.error());
          break;
        case kingfisher::v1::ConsumeResponse::kBatch:
          end = Enqueue(resp.batch());
          break;
        default:  // `created` and future responses carry nothing to deliver
          break;
      }
      absl::MutexLock l(&mu_);
      if (cancelled_) {
        call_over = false;
        break;
      }
    }
  }
  if (!call_over) context_.TryCancel();
  grpc::Status st = rw_->Finish();
  if (end.ok()) {
    end = rpc::FromGrpcStatus(st);
    if (end.ok() || end.code() == absl::StatusCode::kCancelled) {
      end = absl::UnavailableError(st.ok() ? "consume stream closed by the server"
                                           : "consume stream reset: " + st.error_message());
    }
  }
  absl::MutexLock l(&mu_);
  status_ = end;
  ended_ = true;
}

}  // namespace kf::client
