#include "rpc/consume_stream.h"

#include <pthread.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "common/errors.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "rpc/completion_loop.h"
#include "rpc/consumed_batch_encoder.h"
#include "rpc/message_convert.h"
#include "trace/context.h"
#include "wal/scan_request.h"
#include "wire/status_convert.h"

namespace kf::rpc {

using kingfisher::v1::ConsumeRequest;
using kingfisher::v1::ConsumeResponse;

namespace {

grpc::ByteBuffer Serialized(const ConsumeResponse& response) {
  grpc::Slice slice(response.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace

ByteBidiReactor* ConsumeStream::Start(ByteStreamOps* call, const WalRegistry* registry,
                                      const StreamingNodeOptions* options, StreamTracker* tracker,
                                      RpcMetrics* metrics, TaskThreads* pumps,
                                      std::string_view peer) {
  auto* stream =
      new ConsumeStream(call, registry, options, tracker, metrics, pumps, pumps->ShardFor(peer));
  if (!tracker->Register(stream, stream->hook_)) {
    stream->End(StreamingError(StreamingCode::kOnShutdown, "server is shutting down"),
                /*send_error=*/false);
    return stream;
  }
  stream->StartRead(&stream->read_buf_);
  return stream;
}

ConsumeStream::ConsumeStream(ByteStreamOps* call, const WalRegistry* registry,
                             const StreamingNodeOptions* options, StreamTracker* tracker,
                             RpcMetrics* metrics, TaskThreads* pumps, size_t shard)
    : ByteBidiReactor(call),
      registry_(registry),
      options_(options),
      tracker_(tracker),
      metrics_(metrics),
      hook_(std::make_shared<Hook>(this, pumps, shard)) {}

void ConsumeStream::Hook::OnServerShutdown() {
  absl::MutexLock lock(&mu_);
  if (stream_ != nullptr) {
    stream_->End(StreamingError(StreamingCode::kOnShutdown, "server is shutting down"),
                 /*send_error=*/true);
  }
}

void ConsumeStream::Hook::Wake() {
  if (wakes_.fetch_add(1, std::memory_order_acq_rel) != 0) return;  // the pump runs again
  // Posted under mu_: once Detach returned no post happens, so a detached stream's wake-up
  // never reaches TaskThreads, which may be gone by then.
  absl::MutexLock lock(&mu_);
  if (stream_ == nullptr) return;
  absl::AnyInvocable<void()&&> pump = [self = shared_from_this()] { self->RunPumps(); };
  // Woken by an append completing on the CompletionLoop (an appender that flushed itself) while
  // the shard's thread sleeps: pump there, once that completion's work (the produce ack) is
  // done, rather than wake a thread. The delivery then leaves from the thread that wrote the
  // ack, and its write completes on the loop without waking it. A busy shard costs no wake-up.
  if (pumps_->Idle(shard_) && CompletionLoop::RunAfterCurrent(std::move(pump))) return;
  pumps_->Post(shard_, std::move(pump));
}

void ConsumeStream::Hook::RunPumps() {
  for (int seen = wakes_.load(std::memory_order_acquire);;) {
    ConsumeStream* stream;
    {
      absl::MutexLock lock(&mu_);
      if (stream_ == nullptr) return;
      stream = stream_;
      ++pumping_;
    }
    stream->Pump();
    {
      absl::MutexLock lock(&mu_);
      --pumping_;
    }
    // Wakes that came during the pump need one more; the last pump resets the count to 0.
    const int before = wakes_.fetch_sub(seen, std::memory_order_acq_rel);
    if (before == seen) return;
    seen = before - seen;
  }
}

void ConsumeStream::Hook::Detach() {
  absl::MutexLock lock(&mu_);
  stream_ = nullptr;
  mu_.Await(absl::Condition(
      +[](int* pumping) { return *pumping == 0; }, &pumping_));
}

absl::Status ConsumeStream::Create(const ConsumeRequest::Create& create) {
  absl::StatusOr<std::string> pchannel = ResolvePChannel(create.pchannel(), create.vchannel());
  if (!pchannel.ok()) return pchannel.status();
  absl::StatusOr<wal::ScanOptions> scan = wal::ScanOptionsFromProto(create);
  if (!scan.ok()) return scan.status();
  absl::StatusOr<std::shared_ptr<wal::Wal>> wal =
      streaming::node::GetAtTerm(*registry_, *pchannel, create.term());
  if (!wal.ok()) return wal.status();
  absl::StatusOr<std::unique_ptr<wal::Scanner>> scanner = (*wal)->Read(*scan);
  if (!scanner.ok()) return scanner.status();
  wal_ = *std::move(wal);
  scanner_ = *std::move(scanner);
  return absl::OkStatus();
}

void ConsumeStream::OnReadDone(bool ok) {
  if (ok) {
    grpc::ProtoBufferReader reader(&read_buf_);
    if (!request_.ParseFromZeroCopyStream(&reader)) {
      End(StreamingError(StreamingCode::kInvalidArgument,
                         "malformed ConsumeRequest: not a valid protobuf message"),
          /*send_error=*/true);
      return;
    }
  }
  if (created_) {
    // Once streaming, the client may only close (or half-close / go away).
    if (!ok || request_.has_close()) {
      End(absl::OkStatus(), /*send_error=*/false);
    } else {
      End(StreamingError(StreamingCode::kInvalidArgument,
                         "consumer already created: only `close` is accepted"),
          /*send_error=*/true);
    }
    return;
  }
  if (!ok) {
    End(absl::OkStatus(), /*send_error=*/false);  // the client left before creating
    return;
  }
  if (!request_.has_create()) {
    End(StreamingError(StreamingCode::kInvalidArgument,
                       "the first Consume request must be `create`"),
        /*send_error=*/true);
    return;
  }
  absl::Status created = Create(request_.create());
  if (!created.ok()) {
    End(created, /*send_error=*/true);
    return;
  }
  created_ = true;
  {
    absl::MutexLock lock(&mu_);
    if (ending_) return;  // shutdown raced with create
    write_in_flight_ = true;
  }
  ConsumeResponse created_response;
  created_response.set_created(true);
  out_ = Serialized(created_response);
  StartWrite(&out_);
  scan_thread_ = std::jthread([this](std::stop_token stop) {
    pthread_setname_np(pthread_self(), "kf-consume");  // attributes CPU and switches in top/perf
    ScanLoop(std::move(stop));
  });
  StartRead(&read_buf_);  // watch for `close` / half-close
}

namespace {
size_t QueuedSize(const ImmutableMessage& m) { return m.message().EncodedSize(); }
}  // namespace

bool ConsumeStream::HasRoomLocked() const {
  return queue_.empty() || (queue_.size() < options_->consume_queue_messages &&
                            queued_bytes_ < options_->consume_queue_bytes);
}

void ConsumeStream::ScanLoop(std::stop_token stop) {
  const trace::Context ctx;
  auto mine = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ending_ || !dispatched_; };
  while (!stop.stop_requested()) {
    bool dispatch;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&mine));  // while dispatched, a pump owns the scanner
      if (ending_) return;
      dispatch = dispatched_ = scanner_->tailing();
    }
    if (dispatch) {
      // The scanner is the pumps' now (one may already run): the first pump, after which the
      // buffer's wake-ups drive the stream.
      hook_->Wake();
      continue;
    }
    absl::StatusOr<ImmutableMessagePtr> next =
        scanner_->Next(ctx, absl::Now() + options_->scan_poll_interval);
    if (!next.ok()) {
      if (absl::IsDeadlineExceeded(next.status())) continue;  // poll stop/ending again
      End(next.status(), /*send_error=*/true);
      return;
    }
    if (*next == nullptr) continue;
    if (!Enqueue(*std::move(next))) return;
    WriteIfIdle();
  }
}

void ConsumeStream::Pump() {
  const trace::Context ctx;
  // A pump usually finds a whole group commit's messages in the buffer (they enter it one by
  // one, faster than this thread wakes up): they leave in one write, one wake-up of the client.
  absl::Cleanup write = [this] { WriteIfIdle(); };
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (ending_ || !dispatched_) return;
      if (!HasRoomLocked()) {
        wake_on_room_ = true;  // WriteQueued wakes the pump once the client took some
        return;
      }
      if (!scanner_->tailing()) {
        dispatched_ = false;  // reading the backend blocks: back to the scan thread
        return;
      }
    }
    absl::StatusOr<ImmutableMessagePtr> next = scanner_->Next(ctx, absl::InfinitePast());
    if (!next.ok()) {
      if (!absl::IsDeadlineExceeded(next.status())) {
        End(next.status(), /*send_error=*/true);
        return;
      }
      if (scanner_->NotifyWhenReadable([hook = hook_] { hook->Wake(); })) return;
      continue;  // appended meanwhile, or no longer tailing
    }
    if (*next != nullptr && !Enqueue(*std::move(next))) return;
  }
}

bool ConsumeStream::Enqueue(ImmutableMessagePtr m) {
  const size_t bytes = QueuedSize(*m);
  absl::MutexLock lock(&mu_);
  auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ending_ || HasRoomLocked(); };
  mu_.Await(absl::Condition(&room));  // a pump checked for room first: no wait there
  if (ending_) return false;
  queued_bytes_ += bytes;
  queue_.push_back(std::move(m));
  return true;
}

void ConsumeStream::WriteIfIdle() {
  {
    absl::MutexLock lock(&mu_);
    if (ending_ || write_in_flight_ || queue_.empty()) return;
    write_in_flight_ = true;
  }
  WriteQueued();
}

void ConsumeStream::WriteQueued() {
  std::vector<ImmutableMessagePtr> batch;
  bool wake = false;
  {
    absl::MutexLock lock(&mu_);
    size_t bytes = 0;
    while (!queue_.empty() &&
           (batch.empty() || bytes + QueuedSize(*queue_.front()) <= kMaxBatchBytes)) {
      bytes += QueuedSize(*queue_.front());
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    queued_bytes_ -= bytes;
    metrics_->Consumed(batch.size(), bytes);
    wake = wake_on_room_;
    wake_on_room_ = false;
  }
  if (wake) hook_->Wake();
  out_ = EncodeConsumedBatch(batch);
  StartWrite(&out_);
}

void ConsumeStream::OnWriteDone(bool ok) {
  bool finish = false;
  bool next = false;
  {
    absl::MutexLock lock(&mu_);
    if (!ok && !ending_) {
      ending_ = true;  // the client is gone
      end_status_ = absl::CancelledError("consumer stream write failed");
      end_send_error_ = false;
    }
    next = !ending_ && !queue_.empty();
    write_in_flight_ = next;
    finish = ending_ && TakeFinishLocked();
  }
  if (next) WriteQueued();
  if (finish) IssueFinish();
}

void ConsumeStream::OnCancel() {
  End(absl::CancelledError("consumer stream cancelled"), /*send_error=*/false);
}

void ConsumeStream::End(const absl::Status& status, bool send_error) {
  bool finish = false;
  {
    absl::MutexLock lock(&mu_);
    if (ending_) return;
    ending_ = true;
    // A client's cancel (or its going away) is not a failure of the request.
    if (!status.ok() && !absl::IsCancelled(status)) metrics_->Failed(status);
    end_status_ = status;
    end_send_error_ = send_error && !status.ok();
    finish = TakeFinishLocked();
  }
  if (finish) IssueFinish();
}

bool ConsumeStream::TakeFinishLocked() {
  if (finish_issued_ || write_in_flight_) return false;
  finish_issued_ = true;
  return true;
}

void ConsumeStream::IssueFinish() {
  grpc::Status status;
  bool send_error;
  {
    absl::MutexLock lock(&mu_);
    status = wire::ToGrpcStatus(end_status_);
    send_error = end_send_error_;
    if (send_error) {
      ConsumeResponse error;
      *error.mutable_error() = wire::ToProtoError(end_status_);
      out_ = Serialized(error);
    }
  }
  // No write is outstanding (TakeFinishLocked) and none will start (ending_), so out_ is ours.
  if (send_error) {
    StartWriteAndFinish(&out_, grpc::WriteOptions(), status);
  } else {
    Finish(status);
  }
}

void ConsumeStream::OnDone() {
  hook_->Detach();
  tracker_->Unregister(this);
  if (scan_thread_.joinable()) {
    scan_thread_.request_stop();
    if (scan_thread_.get_id() == std::this_thread::get_id()) {
      scan_thread_.detach();
    } else {
      scan_thread_.join();  // returns within one scan poll interval: ending_ is set
    }
  }
  delete this;
}

}  // namespace kf::rpc
