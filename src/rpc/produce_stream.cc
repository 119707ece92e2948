#include "rpc/produce_stream.h"

#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "message/message_trace.h"
#include "message/validate.h"
#include "rpc/message_convert.h"
#include "trace/context.h"
#include "wire/status_convert.h"

namespace kf::rpc {
namespace {

using google::protobuf::internal::WireFormatLite;
using kingfisher::v1::ProduceRequest;
using kingfisher::v1::ProduceResponse;

// Best effort: the request_id (field 1) of a request that does not parse as a whole, so the
// client can match the error to its request. 0 when it cannot be found.
uint64_t SalvageRequestId(const grpc::ByteBuffer& buf) {
  std::vector<grpc::Slice> slices;
  if (!buf.Dump(&slices).ok()) return 0;
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  while (true) {
    uint32_t tag = in.ReadTag();
    if (tag == 0) return 0;
    if (tag == WireFormatLite::MakeTag(ProduceRequest::kRequestIdFieldNumber,
                                       WireFormatLite::WIRETYPE_VARINT)) {
      uint64_t id = 0;
      return in.ReadVarint64(&id) ? id : 0;
    }
    if (!WireFormatLite::SkipField(&in, tag)) return 0;
  }
}

ProduceResponse ErrorResponse(uint64_t request_id, const absl::Status& status) {
  ProduceResponse r;
  r.set_request_id(request_id);
  *r.mutable_error() = wire::ToProtoError(status);
  return r;
}

absl::Status OnShutdownError() {
  return StreamingError(StreamingCode::kOnShutdown, "server is shutting down");
}

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ProduceStream::Start(
    const WalRegistry* registry, const StreamingNodeOptions* options, StreamTracker* tracker,
    RpcMetrics* metrics) {
  auto stream = std::make_shared<ProduceStream>(registry, options, tracker, metrics);
  ProduceStream* raw = stream.get();
  {
    absl::MutexLock lock(&raw->mu_);
    raw->self_ = stream;
  }
  if (!tracker->Register(raw, stream)) {
    // Refused before any read: finish at once; OnDone releases self_.
    {
      absl::MutexLock lock(&raw->mu_);
      raw->shutting_down_ = true;
      raw->finish_called_ = true;
    }
    metrics->Failed(StreamingCode::kOnShutdown);
    raw->Finish(wire::ToGrpcStatus(OnShutdownError()));
    return raw;
  }
  raw->StartRead(&raw->read_buf_);
  return raw;
}

ProduceStream::ProduceStream(const WalRegistry* registry, const StreamingNodeOptions* options,
                             StreamTracker* tracker, RpcMetrics* metrics)
    : registry_(registry), options_(options), tracker_(tracker), metrics_(metrics) {}

void ProduceStream::OnReadDone(bool ok) {
  if (!ok) {
    Actions a;
    {
      absl::MutexLock lock(&mu_);
      reads_done_ = true;
      MaybeWriteOrFinishLocked(&a);
    }
    Run(std::move(a));
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (finish_called_) return;  // the request arrived after we chose to finish: drop it
  }
  HandleRequest();
  Actions a;
  {
    absl::MutexLock lock(&mu_);
    if (finish_called_ || reads_done_) return;
    if (inflight_appends_ >= options_->max_inflight_appends_per_stream) {
      read_paused_ = true;  // resumed by the append completion that makes room
    } else {
      a.start_read = true;
    }
  }
  Run(std::move(a));
}

void ProduceStream::HandleRequest() {
  ProduceRequest req;
  {
    grpc::ProtoBufferReader reader(&read_buf_);
    if (!req.ParseFromZeroCopyStream(&reader)) {
      Respond(ErrorResponse(SalvageRequestId(read_buf_),
                            StreamingError(StreamingCode::kInvalidArgument,
                                           "malformed ProduceRequest: not a valid protobuf "
                                           "message")),
              false);
      return;
    }
  }
  const uint64_t request_id = req.request_id();
  bool shutting_down;
  {
    absl::MutexLock lock(&mu_);
    shutting_down = shutting_down_;
  }
  if (shutting_down) {
    Respond(ErrorResponse(request_id, OnShutdownError()), false);
    return;
  }
  if (req.message().empty()) {
    Respond(ErrorResponse(request_id, StreamingError(StreamingCode::kInvalidArgument,
                                                     "ProduceRequest has no message")),
            false);
    return;
  }
  absl::StatusOr<MutableMessage> decoded = MutableMessage::Decode(req.message());
  if (!decoded.ok()) {
    Respond(ErrorResponse(request_id, decoded.status()), false);
    return;
  }
  MutableMessage msg = *std::move(decoded);
  absl::Status valid = ValidateProducedMessage(
      msg, ValidationOptions{.max_payload_bytes = options_->max_payload_bytes});
  if (!valid.ok()) {
    Respond(ErrorResponse(request_id, valid), false);
    return;
  }
  absl::StatusOr<std::string> pchannel = ResolvePChannel(req.pchannel(), msg.vchannel());
  if (!pchannel.ok()) {
    Respond(ErrorResponse(request_id, pchannel.status()), false);
    return;
  }
  absl::StatusOr<std::shared_ptr<wal::Wal>> wal =
      streaming::node::GetAtTerm(*registry_, *pchannel, req.term());
  if (!wal.ok()) {
    Respond(ErrorResponse(request_id, wal.status()), false);
    return;
  }
  const Term term = (*wal)->term();
  // The client's wal.dist_append span (in `_tc`) is the parent of the server's wal.append.
  trace::Context ctx = ExtractTraceContext(trace::Context(), msg);
  std::shared_ptr<ProduceStream> self;
  {
    absl::MutexLock lock(&mu_);
    ++inflight_appends_;
    self = self_;
  }
  (*wal)->Append(
      ctx, std::move(msg),
      [self = std::move(self), request_id, term](absl::StatusOr<wal::AppendResult> result) mutable {
        self->OnAppendDone(request_id, term, std::move(result));
      });
}

void ProduceStream::OnAppendDone(uint64_t request_id, Term term,
                                 absl::StatusOr<wal::AppendResult> result) {
  if (!result.ok()) {
    Respond(ErrorResponse(request_id, result.status()), true);
    return;
  }
  if (options_->after_durable) options_->after_durable();
  ProduceResponse r;
  r.set_request_id(request_id);
  r.set_message_id(result->id.Encode());
  r.set_timetick(result->timetick.value());
  if (result->last_confirmed.valid()) r.set_last_confirmed(result->last_confirmed.Encode());
  if (result->txn) *r.mutable_txn() = *result->txn;
  r.set_term(term.value());
  Respond(r, true);
}

void ProduceStream::Respond(const ProduceResponse& response, bool append_completed) {
  metrics_->Produced(response.has_error()
                         ? static_cast<StreamingCode>(response.error().streaming_code())
                         : StreamingCode::kOk);
  grpc::ByteBuffer buf;
  bool own = false;
  grpc::Status s = grpc::SerializationTraits<ProduceResponse>::Serialize(response, &buf, &own);
  Actions a;
  {
    absl::MutexLock lock(&mu_);
    if (append_completed) {
      --inflight_appends_;
      if (read_paused_ && !finish_called_ &&
          inflight_appends_ < options_->max_inflight_appends_per_stream) {
        read_paused_ = false;
        a.start_read = true;
      }
    }
    if (s.ok() && !broken_ && !finish_called_) pending_.push_back(std::move(buf));
    MaybeWriteOrFinishLocked(&a);
  }
  Run(std::move(a));
}

void ProduceStream::OnWriteDone(bool ok) {
  Actions a;
  {
    absl::MutexLock lock(&mu_);
    write_in_flight_ = false;
    if (!ok) {
      broken_ = true;  // the client is gone: nobody will read the remaining acks
      pending_.clear();
    }
    MaybeWriteOrFinishLocked(&a);
  }
  Run(std::move(a));
}

void ProduceStream::OnCancel() {
  Actions a;
  {
    absl::MutexLock lock(&mu_);
    broken_ = true;
    pending_.clear();
    MaybeWriteOrFinishLocked(&a);
  }
  Run(std::move(a));
}

void ProduceStream::OnServerShutdown() {
  Actions a;
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    MaybeWriteOrFinishLocked(&a);
  }
  Run(std::move(a));
}

void ProduceStream::MaybeWriteOrFinishLocked(Actions* a) {
  if (finish_called_) return;
  if (!write_in_flight_ && !broken_ && !pending_.empty()) {
    writing_ = std::move(pending_.front());
    pending_.pop_front();
    write_in_flight_ = true;
    a->start_write = true;
    return;
  }
  // Finish only when nothing can still reference the stream's buffers or want to write: every
  // append completed and every ack written (or the client is gone).
  if (write_in_flight_ || inflight_appends_ > 0) return;
  if (!(reads_done_ || broken_ || shutting_down_)) return;
  finish_called_ = true;
  a->start_read = false;
  a->finish = true;
  if (broken_) {
    a->finish_status = grpc::Status(grpc::StatusCode::CANCELLED, "stream cancelled");
  } else if (shutting_down_) {
    a->finish_status = wire::ToGrpcStatus(OnShutdownError());
  } else {
    a->finish_status = grpc::Status::OK;
  }
}

void ProduceStream::Run(Actions a) {
  // writing_ is stable while write_in_flight_ is set, so it may be passed outside the lock.
  if (a.start_write) StartWrite(&writing_);
  if (a.start_read) StartRead(&read_buf_);
  if (a.finish) Finish(a.finish_status);
}

void ProduceStream::OnDone() {
  tracker_->Unregister(this);
  std::shared_ptr<ProduceStream> self;
  {
    absl::MutexLock lock(&mu_);
    self = std::move(self_);
  }
  // `self` may be the last reference: the stream is freed when it goes out of scope.
}

}  // namespace kf::rpc
