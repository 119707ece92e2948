// ProducerImpl: the Producer of include/kingfisher/producer.h over StreamingNode.Produce.
//
// Two entries: the public AppendAsync, which checks and converts a user's Message
// (public_message.h), and AppendMessage, which takes the message model as is — for the
// library's own messages (a transaction's Begin, bodies and Commit carry `_tx`) and the
// server side (the broadcaster's DDL copies carry `_bh`, client_internal.h).
//
// Design: an append is an Op that lives until its callback ran. Each attempt gets a fresh
// entry id, registered in pending_ before the message is queued on the stream (which batches
// it with others, produce_stream.h); the stream's reader thread matches results by id, so
// answers may arrive in any order. A broken stream fails every
// attempt registered on it; failed attempts are retried from the TimerQueue after a backoff.
// An attempt that times out is forgotten (a late answer is ignored) and its stream reset.
//
// Thread-safety: all public methods are thread-safe; internal state is guarded by mu_. Never
// hold mu_ while writing to a stream or running a user callback.
// Ownership: owns its streams, their reader threads and the timer thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "client/local_transport.h"
#include "client/produce_stream.h"
#include "client/retry.h"
#include "client/router.h"
#include "client/session_clock.h"
#include "client/timer_queue.h"
#include "grpcpp/channel.h"
#include "kingfisher/client.h"
#include "kingfisher/producer.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "message/message.h"
#include "trace/context.h"

namespace kf::client {

class ProducerImpl final : public kingfisher::Producer {
 public:
  // `local` (may be empty) is the in-process fast path (local_transport.h).
  // `session` (may be null) learns every acknowledged append.
  ProducerImpl(std::shared_ptr<Router> router, LocalTransport local,
               kingfisher::ClientOptions client_options, kingfisher::ProducerOptions options,
               std::shared_ptr<SessionClock> session = nullptr);
  ~ProducerImpl() override;

  const std::string& producer_id() const override { return producer_id_; }
  void AppendAsync(kingfisher::Message message, kingfisher::AppendCallback done,
                   kingfisher::AppendOptions options) override;
  absl::StatusOr<std::unique_ptr<kingfisher::Transaction>> BeginTxn(
      std::string vchannel, kingfisher::TxnOptions options) override;
  void Close() override;

  // Appends `message` as it is, with the errors of AppendAsync: stamps `_v` and `_ik` (a
  // broadcast copy keeps its own `_ik`), opens `wal.autocommit` under `parent` unless the
  // message belongs to a transaction or a broadcast (then `parent` is its context), and
  // retries until `deadline` (absl::InfinitePast(): now + ClientOptions::append_timeout).
  void AppendMessage(MutableMessage message, AppendDone done, absl::Time deadline,
                     const trace::Context& parent);
  // AppendMessage, waiting for the result.
  absl::StatusOr<kingfisher::AppendResult> AppendMessageSync(MutableMessage message,
                                                             absl::Time deadline,
                                                             const trace::Context& parent);

 private:
  struct Op;
  struct Pending {
    std::shared_ptr<Op> op;
    std::shared_ptr<ProduceStream> stream;
    std::shared_ptr<trace::Span> span;  // wal.dist_append of this attempt
    TimerQueue::TaskId timeout;         // the attempt's timeout task
  };

  // Messages of one pchannel that wait their turn, in sequence order: retries, and appends
  // made while the pchannel has no live stream (in-process: no local route) or others already
  // wait. One timer task at a time drains a lane, and only it opens streams; while a lane
  // exists (also while its drain holds the last message) new appends join it, and no new
  // stream carries anything before every retired stream of the pchannel gave its messages
  // back. So a retried message is never overtaken by a later one of the same producer — only
  // a message failing alone with a retryable error, while later ones succeed, can be.
  struct Lane {
    std::map<uint64_t, std::shared_ptr<Op>> waiting;  // by sequence
    bool drain_scheduled = false;                     // a DrainLane task is queued or running
    bool stop = false;  // an attempt failed meanwhile: the drain resumes after retry_at
    absl::Time retry_at = absl::InfinitePast();
  };

  // One attempt: directly on the pchannel's live stream (unless something waits in its lane),
  // or, from a lane, after resolving the route and opening a stream if needed.
  void StartAttempt(const std::shared_ptr<Op>& op, bool from_lane);
  void SendOn(const std::shared_ptr<Op>& op, const std::shared_ptr<ProduceStream>& stream,
              absl::Time attempt_deadline, bool from_lane);
  bool MustWaitLocked(const Op& op, bool from_lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Puts `op` in its lane; the drain starts now, or after `retry_at` for a retry.
  void WaitInLaneLocked(const std::shared_ptr<Op>& op, std::optional<absl::Time> retry_at)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DrainLane(const std::string& pchannel) ABSL_LOCKS_EXCLUDED(mu_);
  // Records a failed attempt: puts `op` in its lane for a retry and returns OK, or returns the
  // error the append finishes with (the caller runs Finish, outside mu_).
  absl::Status FailAttemptLocked(const std::shared_ptr<Op>& op, const absl::Status& s)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The attempt on the in-process fast path.
  void AppendLocal(const std::shared_ptr<Op>& op, const std::shared_ptr<LocalPChannel>& local);
  // The live stream of `pchannel` on `route`, or a new one once the route's channel is ready;
  // waits at most until `attempt_deadline` (UNAVAILABLE after it, CANCELLED when the producer
  // closes).
  absl::StatusOr<std::shared_ptr<ProduceStream>> GetStream(const std::string& pchannel,
                                                           const Router::Route& route,
                                                           absl::Time attempt_deadline);
  void OnResponse(ProduceStream* stream, const kingfisher::v1::ProduceResponse& resp);
  void OnStreamBroken(ProduceStream* stream, const absl::Status& status);
  void OnAttemptTimeout(const std::shared_ptr<Op>& op, uint64_t request_id);
  // The attempt ended (its Pending entry is already removed).
  void AttemptDone(const std::shared_ptr<Op>& op, absl::StatusOr<kingfisher::AppendResult> r);
  void Finish(const std::shared_ptr<Op>& op, absl::StatusOr<kingfisher::AppendResult> r);
  void ReapDeadStreams() ABSL_LOCKS_EXCLUDED(mu_);

  const std::shared_ptr<Router> router_;
  const LocalTransport local_;
  const kingfisher::ClientOptions client_options_;
  const std::string producer_id_;
  const kingfisher::BatchingOptions batching_;
  const std::shared_ptr<SessionClock> session_;  // may be null
  TimerQueue timer_;

  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_sequence_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t next_request_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Appends whose callback has not run yet, by sequence.
  absl::flat_hash_map<uint64_t, std::shared_ptr<Op>> ops_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<ProduceStream>, std::less<>> streams_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<ProduceStream>> dead_streams_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Lane> lanes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::client
