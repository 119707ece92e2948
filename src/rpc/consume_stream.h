// ConsumeStream: the server side of one StreamingNode.Consume bidi stream (gRPC callback API).
//
// The first request must be `create` (else INVALID_ARGUMENT); it opens a Wal Scanner (policy,
// vchannel and deliver filters) and answers `created`. A scanner thread then queues what the
// scanner yields (Txn messages with their inner messages) and the stream writes them, one write
// at a time: a write carries every queued message (one ConsumedBatch), and the next write is
// started by the completion of the previous one, so the scanner thread is woken only by the WAL
// and a burst costs one write. The queue is bounded (kMaxQueuedMessages / kMaxQueuedBytes): a
// full queue stops the scanner, so back-pressure follows the client's flow control. A later `close`
// request, a half-close, cancellation or server shutdown ends the stream. A scan error is sent as a
// terminal `error` response and as the stream's status.
//
// Thread-safety: gRPC reactions, the scanner thread and shutdown run concurrently; state is
// guarded by mu_. Ownership: owned by gRPC until OnDone, which stops and joins the scanner
// thread (its scanner and Wal reference die with the stream) and deletes the stream.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "kingfisher/v1/streaming.pb.h"
#include "rpc/node_options.h"
#include "rpc/rpc_metrics.h"
#include "rpc/stream_tracker.h"
#include "rpc/wal_registry.h"

namespace kf::rpc {

class ConsumeStream final : public grpc::ServerBidiReactor<kingfisher::v1::ConsumeRequest,
                                                           kingfisher::v1::ConsumeResponse> {
 public:
  // Creates the stream and starts reading. Pointers are borrowed from the service.
  static grpc::ServerBidiReactor<kingfisher::v1::ConsumeRequest, kingfisher::v1::ConsumeResponse>*
  Start(const WalRegistry* registry, const StreamingNodeOptions* options, StreamTracker* tracker,
        RpcMetrics* metrics);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // Forwards shutdown to the stream while it is alive (the stream itself is not shared_ptr
  // owned; this small object is, so the tracker can hold a weak reference).
  class ShutdownHook final : public ShutdownAware {
   public:
    explicit ShutdownHook(ConsumeStream* s) : stream_(s) {}
    void OnServerShutdown() override;
    void Detach();

   private:
    absl::Mutex mu_;
    ConsumeStream* stream_ ABSL_GUARDED_BY(mu_);
  };

  ConsumeStream(const WalRegistry* registry, const StreamingNodeOptions* options,
                StreamTracker* tracker, RpcMetrics* metrics);

  absl::Status Create(const kingfisher::v1::ConsumeRequest::Create& create);
  void ScanLoop(std::stop_token stop);
  // Ends the stream with `status`; with `send_error` an `error` response precedes it. The first
  // call wins; safe from any thread.
  void End(const absl::Status& status, bool send_error);
  // Issues the deferred finish once no write is outstanding. REQUIRES: mu_ held; returns true
  // when the caller must call Finish/StartWriteAndFinish after unlocking.
  bool TakeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void IssueFinish();
  // Fills out_ with queued messages (at least one, at most kMaxBatchBytes unless the first is
  // larger) and starts its write. REQUIRES: write_in_flight_ was set by the caller, which makes
  // out_ the caller's until OnWriteDone; mu_ not held.
  void WriteQueued();

  static constexpr size_t kMaxQueuedMessages = 256;
  static constexpr size_t kMaxQueuedBytes = 8 << 20;
  static constexpr size_t kMaxBatchBytes = 4 << 20;

  const WalRegistry* const registry_;
  const StreamingNodeOptions* const options_;
  StreamTracker* const tracker_;
  RpcMetrics* const metrics_;
  std::shared_ptr<ShutdownHook> hook_;

  kingfisher::v1::ConsumeRequest request_;  // read path only
  bool created_ = false;                    // read path only

  // Set by Create before the scanner thread starts; used only by that thread afterwards.
  std::shared_ptr<wal::Wal> wal_;
  std::unique_ptr<wal::Scanner> scanner_;

  absl::Mutex mu_;
  // Written only by whoever set write_in_flight_ (see WriteQueued), read by gRPC until
  // OnWriteDone.
  kingfisher::v1::ConsumeResponse out_;
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<ImmutableMessagePtr> queue_ ABSL_GUARDED_BY(mu_);  // scanned, not yet written
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool ending_ ABSL_GUARDED_BY(mu_) = false;         // End was called
  bool finish_issued_ ABSL_GUARDED_BY(mu_) = false;  // Finish or StartWriteAndFinish called
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
  bool end_send_error_ ABSL_GUARDED_BY(mu_) = false;

  std::jthread scan_thread_;
};

}  // namespace kf::rpc
