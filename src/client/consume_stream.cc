#include "client/consume_stream.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "message/message.h"
#include "wire/status_convert.h"

namespace kf::client {

absl::StatusOr<kingfisher::ConsumedMessage> DecodeConsumed(kingfisher::v1::ConsumedMessage* m) {
  kingfisher::ConsumedMessage out;
  if (!m->message_id().empty()) {
    auto id = MessageId::Decode(m->message_id());
    if (!id.ok()) {
      return absl::DataLossError(
          absl::StrCat("undecodable message id in consume stream: ", id.status().message()));
    }
    out.id = *id;
  }
  // The wire message's string becomes the payload's storage: no copy of the payload.
  absl::StatusOr<MutableMessage> decoded =
      MutableMessage::DecodeOwned(std::move(*m->mutable_message()));
  if (!decoded.ok()) {
    return absl::DataLossError(
        absl::StrCat("undecodable message in consume stream: ", decoded.status().message()));
  }
  MutableMessage& msg = *decoded;
  out.type = msg.type();
  out.timetick = msg.timetick().value_or(TimeTick(0));
  if (auto lc = msg.last_confirmed()) {
    out.last_confirmed = *lc;
  } else if (msg.last_confirmed_is_self()) {
    out.last_confirmed = out.id;
  }
  out.vchannel = std::string(msg.vchannel());
  out.payload = std::move(*msg.mutable_payload());
  out.properties = msg.TakeProperties();
  for (auto& inner : *m->mutable_inner()) {
    auto in = DecodeConsumed(&inner);
    if (!in.ok()) return in.status();
    out.messages.push_back(*std::move(in));
  }
  return out;
}

namespace {

gpr_timespec GrpcDeadline(absl::Time t) {
  if (t == absl::InfiniteFuture()) return gpr_inf_future(GPR_CLOCK_REALTIME);
  const timespec ts = absl::ToTimespec(std::max(t, absl::UnixEpoch()));
  gpr_timespec out;
  out.tv_sec = ts.tv_sec;
  out.tv_nsec = static_cast<int32_t>(ts.tv_nsec);
  out.clock_type = GPR_CLOCK_REALTIME;
  return out;
}

}  // namespace

ConsumeStream::ConsumeStream(Router::Route route, kingfisher::v1::ConsumeRequest create,
                             size_t capacity)
    : route_(std::move(route)),
      create_(std::move(create)),
      capacity_(capacity == 0 ? 1 : capacity) {
  create_.mutable_create()->set_term(route_.term);
  rw_ = route_.node->stub->AsyncConsume(&context_, &cq_, Tag(kStart));
  outstanding_ = 1;
}

ConsumeStream::~ConsumeStream() {
  Cancel();
  // Every started operation completes after the cancel; the call ends with its Finish, which
  // may be started only once no Read is outstanding.
  void* tag;
  bool ok;
  for (;;) {
    if (outstanding_ == 0) {
      if (finishing_) break;
      StartFinish();
    }
    if (!cq_.Next(&tag, &ok)) break;
    Handle(static_cast<Op>(reinterpret_cast<intptr_t>(tag)), ok);
  }
  cq_.Shutdown();
  while (cq_.Next(&tag, &ok)) {
  }
}

void ConsumeStream::Cancel() {
  cancelled_.store(true, std::memory_order_release);
  context_.TryCancel();
}

DeliveryStream::Wait ConsumeStream::WaitFor(absl::Time deadline) {
  for (;;) {
    if (!queue_.empty()) return Wait::kMessage;
    if (cancelled_.load(std::memory_order_acquire)) return Wait::kCancelled;
    if (ended_) return Wait::kEnded;
    void* tag;
    bool ok;
    switch (cq_.AsyncNext(&tag, &ok, GrpcDeadline(deadline))) {
      case grpc::CompletionQueue::TIMEOUT:
        return Wait::kDeadline;
      case grpc::CompletionQueue::SHUTDOWN:  // not before the destructor; treat as the end
        return Wait::kEnded;
      case grpc::CompletionQueue::GOT_EVENT:
        Handle(static_cast<Op>(reinterpret_cast<intptr_t>(tag)), ok);
        break;
    }
  }
}

kingfisher::ConsumedMessage ConsumeStream::Pop() {
  kingfisher::ConsumedMessage m = std::move(queue_.front());
  queue_.pop_front();
  if (queue_.size() < capacity_) StartRead();
  return m;
}

void ConsumeStream::Handle(Op op, bool ok) {
  --outstanding_;
  switch (op) {
    case kStart:
      if (!ok) {
        reading_ = false;
        StartFinish();
        return;
      }
      rw_->Write(create_, Tag(kWrite));
      ++outstanding_;
      StartRead();
      return;
    case kWrite:
      return;  // a failed write shows as a failed read
    case kRead:
      read_pending_ = false;
      if (!ok) {
        reading_ = false;
        StartFinish();
        return;
      }
      Receive();
      if (!reading_) {
        context_.TryCancel();  // a server error or a message we cannot decode ends the call
        StartFinish();
      } else if (queue_.size() < capacity_) {
        StartRead();
      }
      return;
    case kFinish:
      ended_ = true;
      status_ = end_;
      if (status_.ok()) {
        status_ = kf::wire::FromGrpcStatus(grpc_status_);
        if (status_.ok() || status_.code() == absl::StatusCode::kCancelled) {
          status_ = absl::UnavailableError(grpc_status_.ok() ? "consume stream closed by the server"
                                                             : "consume stream reset: " +
                                                                   grpc_status_.error_message());
        }
      }
      return;
  }
}

void ConsumeStream::Receive() {
  switch (response_.response_case()) {
    case kingfisher::v1::ConsumeResponse::kError:
      end_ = kf::wire::FromProtoError(response_.error());
      reading_ = false;
      return;
    case kingfisher::v1::ConsumeResponse::kBatch:
      for (kingfisher::v1::ConsumedMessage& wire : *response_.mutable_batch()->mutable_messages()) {
        absl::StatusOr<kingfisher::ConsumedMessage> m = DecodeConsumed(&wire);
        if (!m.ok()) {
          end_ = m.status();
          reading_ = false;
          return;
        }
        queue_.push_back(*std::move(m));
      }
      return;
    default:  // `created` and future responses carry nothing to deliver
      return;
  }
}

void ConsumeStream::StartRead() {
  if (!reading_ || read_pending_ || finishing_) return;
  rw_->Read(&response_, Tag(kRead));
  read_pending_ = true;
  ++outstanding_;
}

void ConsumeStream::StartFinish() {
  if (finishing_) return;
  finishing_ = true;
  rw_->Finish(&grpc_status_, Tag(kFinish));
  ++outstanding_;
}

}  // namespace kf::client
