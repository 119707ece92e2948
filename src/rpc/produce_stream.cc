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
using kingfisher::v1::ProduceEntry;
using kingfisher::v1::ProduceRequest;
using kingfisher::v1::ProduceResponse;
using kingfisher::v1::ProduceResult;

// Best effort: the ids of the entries of a request that does not parse as a whole, so the
// client can match the error to its messages. An entry whose id cannot be read is left out
// (its attempt times out on the client and is retried under its `_ik`).
std::vector<uint64_t> SalvageEntryIds(const grpc::ByteBuffer& buf) {
  std::vector<uint64_t> ids;
  std::vector<grpc::Slice> slices;
  if (!buf.Dump(&slices).ok()) return ids;
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  const uint32_t entry_tag = WireFormatLite::MakeTag(ProduceRequest::kEntriesFieldNumber,
                                                     WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  const uint32_t id_tag =
      WireFormatLite::MakeTag(ProduceEntry::kIdFieldNumber, WireFormatLite::WIRETYPE_VARINT);
  while (true) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return ids;
    if (tag != entry_tag) {
      if (!WireFormatLite::SkipField(&in, tag)) return ids;
      continue;
    }
    uint32_t length = 0;
    if (!in.ReadVarint32(&length)) return ids;
    const auto limit = in.PushLimit(static_cast<int>(length));
    uint64_t id = 0;
    bool found = false;
    while (!found) {
      const uint32_t inner = in.ReadTag();
      if (inner == 0) break;
      if (inner == id_tag) {
        found = in.ReadVarint64(&id);
        break;
      }
      if (!WireFormatLite::SkipField(&in, inner)) break;
    }
    if (found) ids.push_back(id);
    in.Skip(in.BytesUntilLimit());
    in.PopLimit(limit);
  }
}

void AddError(uint64_t id, const absl::Status& status, ProduceResponse* out) {
  ProduceResult* r = out->add_results();
  r->set_id(id);
  *r->mutable_error() = wire::ToProtoError(status);
}

absl::Status OnShutdownError() {
  return StreamingError(StreamingCode::kOnShutdown, "server is shutting down");
}

}  // namespace

ByteBidiReactor* ProduceStream::Start(ByteStreamOps* call, const WalRegistry* registry,
                                      const StreamingNodeOptions* options, StreamTracker* tracker,
                                      RpcMetrics* metrics) {
  auto stream = std::make_shared<ProduceStream>(call, registry, options, tracker, metrics);
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

ProduceStream::ProduceStream(ByteStreamOps* call, const WalRegistry* registry,
                             const StreamingNodeOptions* options, StreamTracker* tracker,
                             RpcMetrics* metrics)
    : ByteBidiReactor(call),
      registry_(registry),
      options_(options),
      tracker_(tracker),
      metrics_(metrics) {}

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
  ProduceResponse refused;  // the entries answered at once, with their errors
  {
    grpc::ProtoBufferReader reader(&read_buf_);
    if (!req.ParseFromZeroCopyStream(&reader)) {
      const absl::Status malformed =
          StreamingError(StreamingCode::kInvalidArgument,
                         "malformed ProduceRequest: not a valid protobuf message");
      for (uint64_t id : SalvageEntryIds(read_buf_)) AddError(id, malformed, &refused);
      return Respond(std::move(refused), 0);
    }
  }
  // A guard counted as an append in flight while the request is judged, so that the stream
  // cannot finish (shutdown, cancel) between this check and the appends it admits.
  bool shutting_down;
  std::shared_ptr<ProduceStream> self;
  {
    absl::MutexLock lock(&mu_);
    if (finish_called_) return;
    shutting_down = shutting_down_;
    if (!shutting_down) {
      ++inflight_appends_;
      self = self_;
    }
  }
  if (shutting_down) {
    for (const ProduceEntry& e : req.entries()) AddError(e.id(), OnShutdownError(), &refused);
    return Respond(std::move(refused), 0);
  }

  // The entries that pass go to their pchannel's Wal in one AppendBatch, in request order; a
  // request names one pchannel, so there is usually one group.
  struct Group {
    std::string pchannel;
    absl::StatusOr<std::shared_ptr<wal::Wal>> wal;
    std::vector<wal::AppendRequest> batch;
  };
  std::vector<Group> groups;
  size_t admitted = 0;
  auto acks = std::make_shared<RequestAcks>();  // counted up before any append is submitted
  const ValidationOptions validation{.max_payload_bytes = options_->max_payload_bytes};
  for (ProduceEntry& entry : *req.mutable_entries()) {
    const uint64_t id = entry.id();
    if (entry.message().empty()) {
      AddError(id, StreamingError(StreamingCode::kInvalidArgument, "ProduceEntry has no message"),
               &refused);
      continue;
    }
    absl::StatusOr<MutableMessage> decoded =
        MutableMessage::DecodeOwned(std::move(*entry.mutable_message()));
    if (!decoded.ok()) {
      AddError(id, decoded.status(), &refused);
      continue;
    }
    if (absl::Status valid = ValidateProducedMessage(*decoded, validation); !valid.ok()) {
      AddError(id, valid, &refused);
      continue;
    }
    absl::StatusOr<std::string> pchannel = ResolvePChannel(req.pchannel(), decoded->vchannel());
    if (!pchannel.ok()) {
      AddError(id, pchannel.status(), &refused);
      continue;
    }
    Group* group = nullptr;
    for (Group& g : groups) {
      if (g.pchannel == *pchannel) group = &g;
    }
    if (group == nullptr) {
      group = &groups.emplace_back();
      group->pchannel = *pchannel;
      group->wal = streaming::node::GetAtTerm(*registry_, *pchannel, req.term());
    }
    if (!group->wal.ok()) {
      AddError(id, group->wal.status(), &refused);
      continue;
    }
    const Term term = (*group->wal)->term();
    // The client's wal.dist_append span (in `_tc`) is the parent of the server's wal.append.
    trace::Context ctx = ExtractTraceContext(trace::Context(), *decoded);
    group->batch.push_back(wal::AppendRequest{
        .ctx = std::move(ctx),
        .msg = *std::move(decoded),
        .done = [self, id, term, acks](absl::StatusOr<wal::AppendResult> result) mutable {
          self->OnAppendDone(id, term, std::move(result), *acks);
        }});
    ++admitted;
    ++acks->left;
  }
  self.reset();
  if (admitted > 0) {
    absl::MutexLock lock(&mu_);
    inflight_appends_ += admitted;
  }
  for (Group& g : groups) {
    if (!g.batch.empty()) (*g.wal)->AppendBatch(std::move(g.batch));
  }
  Respond(std::move(refused), 1);  // and lets go of the guard
}

void ProduceStream::OnAppendDone(uint64_t id, Term term, absl::StatusOr<wal::AppendResult> result,
                                 RequestAcks& acks) {
  ProduceResponse response;
  if (!result.ok()) {
    AddError(id, result.status(), &response);
    return Respond(std::move(response), 1, &acks);
  }
  if (options_->after_durable) options_->after_durable();
  ProduceResult* r = response.add_results();
  r->set_id(id);
  r->set_message_id(result->id.Encode());
  r->set_timetick(result->timetick.value());
  if (result->last_confirmed.valid()) r->set_last_confirmed(result->last_confirmed.Encode());
  if (result->txn) *r->mutable_txn() = *result->txn;
  r->set_term(term.value());
  Respond(std::move(response), 1, &acks);
}

void ProduceStream::Respond(ProduceResponse response, size_t appends_completed, RequestAcks* acks) {
  for (const ProduceResult& r : response.results()) {
    metrics_->Produced(r.has_error() ? static_cast<StreamingCode>(r.error().streaming_code())
                                     : StreamingCode::kOk);
  }
  // Serialized responses concatenate into one (only a repeated field): results that complete
  // while a write is in flight go out together in the next one.
  std::string bytes;
  const bool serialized = response.results_size() > 0 && response.SerializeToString(&bytes);
  Actions a;
  {
    absl::MutexLock lock(&mu_);
    if (appends_completed > 0) {
      inflight_appends_ -= appends_completed;
      if (read_paused_ && !finish_called_ &&
          inflight_appends_ < options_->max_inflight_appends_per_stream) {
        read_paused_ = false;
        a.start_read = true;
      }
    }
    if (serialized && !broken_ && !finish_called_) pending_.append(bytes);
    // A request's appends usually complete together, one after another on the WAL's
    // completion thread: their results wait for the last one and go out in one response (one
    // write, one wake-up of the client) instead of the first alone and the rest after it.
    if (acks != nullptr ? --acks->left == 0 : serialized) ready_ = true;
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
  if (!write_in_flight_ && !broken_ && ready_ && !pending_.empty()) {
    grpc::Slice slice(pending_);
    writing_ = grpc::ByteBuffer(&slice, 1);
    pending_.clear();
    ready_ = false;
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
