// ConsumeStream: the server side of one StreamingNode.Consume bidi stream (a BidiReactor on the
// CompletionLoop).
//
// The first request must be `create` (else INVALID_ARGUMENT); it opens a Wal Scanner (policy,
// vchannel and deliver filters) and answers `created`. The stream then queues what the scanner
// yields (Txn messages with their inner messages) and writes them, one write at a time: a write
// carries every queued message (one ConsumedBatch), and the next write is started by the
// completion of the previous one, so a burst costs one write. The queue is bounded
// (StreamingNodeOptions::consume_queue_*): a full queue stops the scanning, so back-pressure
// follows the client's flow control. A later `close` request, a half-close, cancellation or
// server shutdown ends the stream. A scan error is sent as a terminal `error` response and as
// the stream's status.
//
// Who reads the scanner: the stream's own scan thread while it reads the backend (catch-up,
// blocking I/O); once the scanner tails the write-ahead buffer, the pumps the buffer's wake-up
// posts to a TaskThreads shard (Pump), so an append wakes one thread for all tailing consumers
// instead of each consumer's thread. The streams of one connection share a shard, so their
// writes leave one after another from one thread. A pump that finds the scanner back in catch-up
// returns it to the scan thread. `dispatched_` says which of the two owns the scanner.
//
// Raw (ByteBuffer) method: a batch goes out as EncodeConsumedBatch builds it, sharing each
// message's one encoding with the other consumers; a request that does not parse ends the
// stream with INVALID_ARGUMENT. The wire protocol is unchanged.
//
// Thread-safety: gRPC reactions, the scan thread, pumps and shutdown run concurrently; state is
// guarded by mu_. Ownership: owned by gRPC until OnDone, which detaches the hook (waiting for a
// running pump), stops and joins the scan thread (its scanner and Wal reference die with the
// stream) and deletes the stream.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "kingfisher/v1/streaming.pb.h"
#include "rpc/async_stream.h"
#include "rpc/node_options.h"
#include "rpc/rpc_metrics.h"
#include "rpc/stream_tracker.h"
#include "rpc/task_threads.h"
#include "streaming/node/wal_registry.h"

namespace kf::rpc {

using streaming::node::WalRegistry;

class ConsumeStream final : public ByteBidiReactor {
 public:
  // Creates the reactor of `call` and starts reading. Pointers are borrowed from the service;
  // `peer` (the call's ServerContext::peer(), its connection) picks the pumps' shard.
  static ByteBidiReactor* Start(ByteStreamOps* call, const WalRegistry* registry,
                                const StreamingNodeOptions* options, StreamTracker* tracker,
                                RpcMetrics* metrics, TaskThreads* pumps, std::string_view peer);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // Reaches the stream while it is alive, for shutdown and for wake-ups (the stream itself is
  // not shared_ptr owned; this small object is, so the tracker and the buffer's wake-ups can
  // hold it).
  class Hook final : public ShutdownAware, public std::enable_shared_from_this<Hook> {
   public:
    Hook(ConsumeStream* s, TaskThreads* pumps, size_t shard)
        : stream_(s), pumps_(pumps), shard_(shard) {}
    void OnServerShutdown() override;
    // Runs the stream's Pump on its shard (or on the CompletionLoop after the current
    // completion, when the shard's thread sleeps): at least once after every call, never two
    // at once.
    void Wake();
    // Afterwards nothing reaches the stream; waits for a running pump.
    void Detach();

   private:
    void RunPumps();

    absl::Mutex mu_;
    ConsumeStream* stream_ ABSL_GUARDED_BY(mu_);
    int pumping_ ABSL_GUARDED_BY(mu_) = 0;
    TaskThreads* const pumps_;
    const size_t shard_;
    std::atomic<int> wakes_{0};  // since the last pump started; > 0: a pump is posted or running
  };

  ConsumeStream(ByteStreamOps* call, const WalRegistry* registry,
                const StreamingNodeOptions* options, StreamTracker* tracker, RpcMetrics* metrics,
                TaskThreads* pumps, size_t shard);

  absl::Status Create(const kingfisher::v1::ConsumeRequest::Create& create);
  // The scan thread: reads the scanner while it is not tailing.
  void ScanLoop(std::stop_token stop);
  // On a TaskThreads shard: reads the tailing scanner without waiting, until it has nothing
  // (then registers a wake-up with the buffer), the queue is full (the write completion wakes
  // it), or it reads the backend again (the scan thread takes over). What it read goes out in
  // one write when it stops, not its first message alone and the rest after that write.
  void Pump();
  // Queues `m`, waiting for room. False: ending.
  bool Enqueue(ImmutableMessagePtr m);
  // Starts a write of what is queued if none is in flight (and the stream is not ending).
  void WriteIfIdle();
  bool HasRoomLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
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

  static constexpr size_t kMaxBatchBytes = 4 << 20;

  const WalRegistry* const registry_;
  const StreamingNodeOptions* const options_;
  StreamTracker* const tracker_;
  RpcMetrics* const metrics_;
  std::shared_ptr<Hook> hook_;

  grpc::ByteBuffer read_buf_;               // read path only
  kingfisher::v1::ConsumeRequest request_;  // read path only: read_buf_ parsed
  bool created_ = false;                    // read path only

  // Set by Create before the scan thread starts; then used by the scan thread, or by pumps
  // while dispatched_.
  std::shared_ptr<wal::Wal> wal_;
  std::unique_ptr<wal::Scanner> scanner_;

  absl::Mutex mu_;
  // A serialized ConsumeResponse. Written only by whoever set write_in_flight_ (see
  // WriteQueued), read by gRPC until OnWriteDone.
  grpc::ByteBuffer out_;
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<ImmutableMessagePtr> queue_ ABSL_GUARDED_BY(mu_);  // scanned, not yet written
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool ending_ ABSL_GUARDED_BY(mu_) = false;         // End was called
  bool finish_issued_ ABSL_GUARDED_BY(mu_) = false;  // Finish or StartWriteAndFinish called
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
  bool end_send_error_ ABSL_GUARDED_BY(mu_) = false;
  bool dispatched_ ABSL_GUARDED_BY(mu_) = false;    // pumps own the scanner, not the thread
  bool wake_on_room_ ABSL_GUARDED_BY(mu_) = false;  // a pump stopped at a full queue

  std::jthread scan_thread_;
};

}  // namespace kf::rpc
