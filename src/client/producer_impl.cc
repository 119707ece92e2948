#include "client/producer_impl.h"

#include <algorithm>
#include <future>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/channel_ready.h"
#include "client/client_internal.h"
#include "client/public_message.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "message/message_trace.h"
#include "message/validate.h"
#include "trace/public_context.h"
#include "trace/tracer.h"
#include "wire/status_convert.h"

namespace kf::client {

struct ProducerImpl::Op {
  uint64_t sequence = 0;
  MutableMessage message;  // stamped; `_tc` = the logical span (or the caller's context)
  std::string pchannel;
  absl::Time deadline;
  AppendDone done;
  trace::Context logical;                     // context of wal.autocommit
  std::shared_ptr<trace::Span> logical_span;  // null when the caller owns the logical span
  Backoff backoff;
  int attempts = 0;
  bool maybe_appended = false;  // some attempt ended ambiguously
  bool finished = false;
  absl::Status last_error;
  int64_t route_version = 0;  // of the route the last attempt used
  int64_t stale_version = 0;  // resolve from a newer assignment than this (after a routing error)
  // An attempt prepared (span started, message encoded) but sent back to wait in its lane:
  // the next attempt sends it as is, so that no span is started for nothing.
  struct Prepared {
    std::shared_ptr<trace::Span> span;
    std::string encoded;
  };
  std::optional<Prepared> prepared;

  explicit Op(const kingfisher::RetryPolicy& p) : backoff(p) {}
};

namespace {

std::string RandomProducerId() {
  std::random_device rd;
  uint64_t v = (uint64_t{rd()} << 32) ^ rd();
  return absl::StrFormat("%016x", v);
}

absl::Status WithContext(const absl::Status& s, std::string_view suffix) {
  return WithMessage(s, absl::StrCat(ToAbsl(ToStd(s.message())), ToAbsl(suffix)));
}

absl::StatusOr<kingfisher::AppendResult> ResultOf(const kingfisher::v1::ProduceResult& r) {
  if (r.has_error() && (r.error().grpc_code() != 0 || r.error().streaming_code() != 0)) {
    return wire::FromProtoError(r.error());
  }
  kingfisher::AppendResult out;
  auto id = MessageId::Decode(r.message_id());
  if (!id.ok()) {
    return absl::DataLossError(
        absl::StrCat("bad message id in produce response: ", id.status().message()));
  }
  out.id = *id;
  out.timetick = TimeTick(r.timetick());
  if (!r.last_confirmed().empty()) {
    auto lc = MessageId::Decode(r.last_confirmed());
    if (lc.ok()) out.last_confirmed = *lc;
  }
  if (r.has_txn() && r.txn().txn_id() != 0) out.txn_id = TxnId(r.txn().txn_id());
  return out;
}

}  // namespace

ProducerImpl::ProducerImpl(std::shared_ptr<Router> router, LocalTransport local,
                           kingfisher::ClientOptions client_options,
                           kingfisher::ProducerOptions options,
                           std::shared_ptr<SessionClock> session)
    : router_(std::move(router)),
      local_(std::move(local)),
      client_options_(std::move(client_options)),
      producer_id_(options.producer_id.empty() ? RandomProducerId()
                                               : std::move(options.producer_id)),
      batching_(options.batching),
      session_(std::move(session)) {}

ProducerImpl::~ProducerImpl() { Close(); }

void ProducerImpl::AppendAsync(kingfisher::Message message, kingfisher::AppendCallback done,
                               kingfisher::AppendOptions options) {
  const trace::Context parent = trace::ContextFromPublic(message.trace);
  absl::StatusOr<MutableMessage> converted = ToMutableMessage(std::move(message));
  if (!converted.ok()) return done(converted.status());
  AppendMessage(
      *std::move(converted),
      [done = std::move(done)](absl::StatusOr<kingfisher::AppendResult> r) { done(std::move(r)); },
      options.deadline ? AbslTime(*options.deadline) : absl::InfinitePast(), parent);
}

absl::StatusOr<kingfisher::AppendResult> ProducerImpl::AppendMessageSync(
    MutableMessage message, absl::Time deadline, const trace::Context& parent) {
  std::promise<absl::StatusOr<kingfisher::AppendResult>> promise;
  std::future<absl::StatusOr<kingfisher::AppendResult>> result = promise.get_future();
  AppendMessage(
      std::move(message),
      [&promise](absl::StatusOr<kingfisher::AppendResult> r) { promise.set_value(std::move(r)); },
      deadline, parent);
  return result.get();
}

void ProducerImpl::AppendMessage(MutableMessage message, AppendDone done, absl::Time deadline,
                                 const trace::Context& parent) {
  auto fail = [&done](absl::Status s) { std::move(done)(std::move(s)); };
  if (message.type() == MessageType::kUnknown) {
    return fail(StreamingError(StreamingCode::kInvalidArgument,
                               "message has no known type (_t); nothing was sent"));
  }
  if (message.vchannel().empty()) {
    return fail(StreamingError(StreamingCode::kInvalidArgument,
                               "message has no vchannel (_vc); nothing was sent"));
  }
  auto pchannel = PChannelOfVChannel(message.vchannel());
  if (!pchannel.ok()) return fail(pchannel.status());

  auto op = std::make_shared<Op>(client_options_.retry);
  op->pchannel = *std::move(pchannel);
  op->deadline = deadline == absl::InfinitePast()
                     ? absl::Now() + AbslDuration(client_options_.append_timeout)
                     : deadline;
  op->done = std::move(done);
  bool closed;
  {
    absl::MutexLock l(&mu_);
    closed = closed_;
    if (!closed) {
      op->sequence = next_sequence_++;
      ops_.emplace(op->sequence, op);
    }
  }
  if (closed) {
    return Finish(op, absl::FailedPreconditionError("producer is closed; nothing was sent"));
  }
  if (!message.HasProperty(prop::kVersion)) {
    message.SetProperty(std::string(prop::kVersion), std::string(prop::kCurrentVersion));
  }
  // A broadcast copy keeps the broadcaster's key ("bc<id>:<i>", docs/ddl.md): the node
  // deduplicates re-appends across coordinator restarts by it, whatever producer sends them.
  if (!(message.HasProperty(prop::kBroadcast) && message.HasProperty(prop::kIdempotencyKey))) {
    message.set_idempotency_key(absl::StrCat(producer_id_, ":", op->sequence));
  }

  // Logical write span (docs/tracing.md §5): only for autocommit messages; txn bodies and
  // broadcasts belong to the caller's wal.txn / wal.broadcast context.
  if (message.HasProperty(prop::kTxn) || message.HasProperty(prop::kBroadcast) ||
      IsTxnControlType(message.type())) {
    op->logical = parent;
  } else {
    auto [ctx, span] =
        StartSpanForMessage(parent, &message, "wal.autocommit", trace::SpanKind::kProducer);
    op->logical = std::move(ctx);
    op->logical_span = std::move(span);
  }
  InjectTraceContext(op->logical, &message);
  op->message = std::move(message);
  // Never wait for a route or a connection on the caller's thread: an append that has no live
  // stream to use waits in its pchannel's lane, which a timer task drains (a caller issuing
  // appends while the server is down would otherwise block for an attempt timeout per append).
  StartAttempt(op, /*from_lane=*/false);
}

void ProducerImpl::StartAttempt(const std::shared_ptr<Op>& op, bool from_lane) {
  {
    absl::MutexLock l(&mu_);
    if (op->finished) return;
  }
  if (absl::Now() >= op->deadline) {
    absl::Status s =
        op->attempts == 0
            ? absl::DeadlineExceededError("append deadline passed before it was sent")
            : absl::DeadlineExceededError(absl::StrCat(
                  "append deadline exceeded after ", op->attempts,
                  " attempt(s); last error: ", op->last_error.ToString(),
                  op->maybe_appended ? "; the message may or may not have been appended" : ""));
    return Finish(op, s);
  }
  const absl::Time attempt_deadline =
      std::min(op->deadline, absl::Now() + AbslDuration(client_options_.attempt_timeout));
  if (!from_lane) {
    // The common case: the pchannel's stream is live and nothing waits before this message.
    std::shared_ptr<ProduceStream> stream;
    {
      absl::MutexLock l(&mu_);
      if (lanes_.contains(op->pchannel)) return WaitInLaneLocked(op, std::nullopt);
      if (!local_) {
        auto it = streams_.find(op->pchannel);
        if (it == streams_.end() || it->second->broken()) {
          return WaitInLaneLocked(op, std::nullopt);
        }
        stream = it->second;
      }
    }
    if (stream != nullptr) return SendOn(op, stream, attempt_deadline, from_lane);
    // The in-process fast path, on this thread when the route points here. Anything else
    // waits in the lane: a caller's thread never opens streams (it may be a stream's reader,
    // running a callback).
    absl::StatusOr<Router::Route> route =
        router_->Resolve(op->pchannel, op->stale_version, attempt_deadline, [this] {
          absl::MutexLock l(&mu_);
          return closed_;
        });
    if (route.ok()) {
      if (std::shared_ptr<LocalPChannel> local = local_(op->pchannel, route->term)) {
        op->route_version = route->version;
        return AppendLocal(op, local);
      }
    }
    absl::MutexLock l(&mu_);
    return WaitInLaneLocked(op, std::nullopt);
  }
  // Wait for ready (docs/semantics.md §3): the pchannel assigned to a node (newer than a route
  // that failed).
  absl::StatusOr<Router::Route> route =
      router_->Resolve(op->pchannel, op->stale_version, attempt_deadline, [this] {
        absl::MutexLock l(&mu_);
        return closed_;
      });
  if (route.ok() && local_) {
    if (std::shared_ptr<LocalPChannel> local = local_(op->pchannel, route->term)) {
      op->route_version = route->version;
      return AppendLocal(op, local);
    }
  }
  auto stream = route.ok() ? GetStream(op->pchannel, *route, attempt_deadline)
                           : absl::StatusOr<std::shared_ptr<ProduceStream>>(route.status());
  if (!stream.ok()) {
    {
      absl::MutexLock l(&mu_);
      ++op->attempts;  // waiting for the connection used up this attempt's time
    }
    return AttemptDone(op, stream.status());
  }
  SendOn(op, *stream, attempt_deadline, from_lane);
}

void ProducerImpl::SendOn(const std::shared_ptr<Op>& op,
                          const std::shared_ptr<ProduceStream>& stream, absl::Time attempt_deadline,
                          bool from_lane) {
  Op::Prepared prepared;
  if (op->prepared) {
    prepared = *std::move(op->prepared);
    op->prepared.reset();
  } else {
    auto [ctx, span] = StartSpanForMessage(op->logical, &op->message, "wal.dist_append",
                                           trace::SpanKind::kProducer);
    EncodeWithTraceContext(ctx, op->message, &prepared.encoded);  // no copy of the message
    prepared.span = std::move(span);
  }
  op->route_version = stream->route().version;

  uint64_t request_id;
  {
    // The timeout is scheduled under mu_ so that it is registered with the attempt before any
    // answer can cancel it (lock order: mu_, then the timer's).
    absl::MutexLock l(&mu_);
    if (MustWaitLocked(*op, from_lane)) {
      op->prepared = std::move(prepared);
      return WaitInLaneLocked(op, std::nullopt);
    }
    request_id = next_request_id_++;
    auto timeout = timer_.Schedule(attempt_deadline,
                                   [this, op, request_id]() { OnAttemptTimeout(op, request_id); });
    pending_[request_id] = Pending{op, stream, prepared.span, timeout};
    ++op->attempts;
  }
  if (stream->Send(request_id, std::move(prepared.encoded))) return;
  // The stream is over. Its reader fails the attempts it knows of, but this one may have been
  // registered after that: fail it here unless the reader already did.
  const absl::Status st =
      absl::UnavailableError("produce stream closed before the request was sent");
  Pending p;
  absl::Status final;
  {
    absl::MutexLock l(&mu_);
    auto it = pending_.find(request_id);
    if (it == pending_.end()) return;
    p = std::move(it->second);
    pending_.erase(it);
    timer_.Cancel(p.timeout);
    auto s = streams_.find(op->pchannel);
    if (s != streams_.end() && s->second == stream) {
      dead_streams_.push_back(std::move(s->second));
      streams_.erase(s);
    }
    final = FailAttemptLocked(op, st);  // op may be retried on another thread from here
  }
  p.span->RecordError(st);
  p.span->End();
  if (!final.ok()) Finish(op, final);
}

bool ProducerImpl::MustWaitLocked(const Op& op, bool from_lane) {
  auto lane = lanes_.find(op.pchannel);
  if (lane == lanes_.end()) return false;
  if (!from_lane) return true;  // whatever is in the lane goes first
  // A lane's own message waits again when an earlier one came back or an attempt failed.
  return lane->second.stop ||
         (!lane->second.waiting.empty() && lane->second.waiting.begin()->first < op.sequence);
}

void ProducerImpl::WaitInLaneLocked(const std::shared_ptr<Op>& op,
                                    std::optional<absl::Time> retry_at) {
  Lane& lane = lanes_[op->pchannel];
  lane.waiting.emplace(op->sequence, op);
  if (!lane.drain_scheduled) {
    lane.drain_scheduled = true;
    timer_.Schedule(retry_at.value_or(absl::Now()),
                    [this, pchannel = op->pchannel]() { DrainLane(pchannel); });
  } else if (retry_at) {
    // The drain under way stops and resumes, from the earliest message, after the backoff.
    lane.stop = true;
    lane.retry_at = std::max(lane.retry_at, *retry_at);
  }
}

void ProducerImpl::DrainLane(const std::string& pchannel) {
  while (true) {
    std::shared_ptr<Op> op;
    {
      absl::MutexLock l(&mu_);
      auto it = lanes_.find(pchannel);
      if (it == lanes_.end()) return;
      Lane& lane = it->second;
      if (lane.waiting.empty()) {
        lanes_.erase(it);
        return;
      }
      if (lane.stop) {
        lane.stop = false;
        const absl::Time when = std::exchange(lane.retry_at, absl::InfinitePast());
        timer_.Schedule(when, [this, pchannel]() { DrainLane(pchannel); });
        return;
      }
      op = std::move(lane.waiting.begin()->second);
      lane.waiting.erase(lane.waiting.begin());
    }
    StartAttempt(op, /*from_lane=*/true);
  }
}

void ProducerImpl::AppendLocal(const std::shared_ptr<Op>& op,
                               const std::shared_ptr<LocalPChannel>& local) {
  {
    absl::MutexLock l(&mu_);
    ++op->attempts;
  }
  // A retry appends the original again. wal.append hangs directly under the logical span: no
  // network hop, no wal.dist_append.
  local->Append(op->logical, op->message, [this, op](absl::StatusOr<kingfisher::AppendResult> r) {
    // Off the WAL's completion thread: the user's callback must not hold up the log.
    timer_.Schedule(absl::Now(),
                    [this, op, r = std::move(r)]() mutable { AttemptDone(op, std::move(r)); });
  });
}

absl::StatusOr<std::shared_ptr<ProduceStream>> ProducerImpl::GetStream(
    const std::string& pchannel, const Router::Route& route, absl::Time attempt_deadline) {
  ReapDeadStreams();
  auto closed = [this] {
    absl::MutexLock l(&mu_);
    return closed_;
  };
  {
    absl::MutexLock l(&mu_);
    if (closed_) return absl::CancelledError("producer closed");
    auto it = streams_.find(pchannel);
    if (it != streams_.end()) {
      const Router::Route& r = it->second->route();
      if (!it->second->broken() && r.node == route.node && r.term == route.term) {
        return it->second;
      }
      // Broken before it was published (so its broken handler could not retire it), or the
      // pchannel moved: retire it; its pending attempts fail and are retried on the new route.
      it->second->Cancel();
      dead_streams_.push_back(std::move(it->second));
      streams_.erase(it);
    }
    // Order: what a retired stream of this pchannel carried goes back to the lane
    // (OnStreamBroken) before anything is sent on a new stream.
    auto reported = [this, &pchannel]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      for (const auto& s : dead_streams_) {
        if (s->pchannel() == pchannel && !s->failures_reported()) return false;
      }
      return true;
    };
    if (!mu_.AwaitWithDeadline(absl::Condition(&reported), attempt_deadline)) {
      return absl::UnavailableError("produce stream to " + pchannel + " did not close in time");
    }
  }
  // A fail-fast stream on a channel that is reconnecting fails at once and leaves the
  // reconnect unpolled (see channel_ready.h). A dead node's channel never gets ready: stop
  // waiting as soon as the pchannel is routed elsewhere.
  bool moved = false;
  absl::Status ready = AwaitChannelReady(*route.node->channel, attempt_deadline, [&] {
    moved = !router_->IsCurrent(pchannel, route);
    return moved || closed();
  });
  if (moved) return absl::UnavailableError("pchannel " + pchannel + " moved while connecting");
  if (!ready.ok()) return ready;
  // Opening a stream may take a round trip: not under mu_.
  auto stream = std::make_shared<ProduceStream>(
      pchannel, route, batching_,
      [this](ProduceStream* s, const kingfisher::v1::ProduceResponse& r) { OnResponse(s, r); },
      [this](ProduceStream* s, const absl::Status& st) { OnStreamBroken(s, st); });
  absl::MutexLock l(&mu_);
  auto [it, inserted] = streams_.emplace(pchannel, stream);
  if (!inserted || closed_) {
    // Lost a race (or closing): retire ours; its reader reports a broken stream with no
    // attempts registered.
    stream->Cancel();
    dead_streams_.push_back(stream);
    if (closed_) return absl::CancelledError("producer closed");
  }
  return it->second;
}

void ProducerImpl::ReapDeadStreams() {
  std::vector<std::shared_ptr<ProduceStream>> reap;
  {
    absl::MutexLock l(&mu_);
    auto keep = dead_streams_.begin();
    for (auto& s : dead_streams_) {
      if (s->finished() && !s->IsReaderThread()) {
        reap.push_back(std::move(s));
      } else {
        *keep++ = std::move(s);
      }
    }
    dead_streams_.erase(keep, dead_streams_.end());
  }
  for (auto& s : reap) s->Join();
}

void ProducerImpl::OnResponse(ProduceStream* /*stream*/,
                              const kingfisher::v1::ProduceResponse& resp) {
  std::vector<std::pair<Pending, const kingfisher::v1::ProduceResult*>> answered;
  answered.reserve(static_cast<size_t>(resp.results_size()));
  {
    absl::MutexLock l(&mu_);
    for (const kingfisher::v1::ProduceResult& r : resp.results()) {
      auto it = pending_.find(r.id());
      if (it == pending_.end()) continue;  // a timed-out attempt: its answer is moot
      timer_.Cancel(it->second.timeout);
      answered.emplace_back(std::move(it->second), &r);
      pending_.erase(it);
    }
  }
  for (auto& [p, r] : answered) {
    auto result = ResultOf(*r);
    if (result.ok()) {
      p.span->SetAttribute("message.timetick", static_cast<int64_t>(result->timetick.value()));
    } else {
      p.span->RecordError(result.status());
    }
    p.span->End();
    AttemptDone(p.op, std::move(result));
  }
}

void ProducerImpl::OnStreamBroken(ProduceStream* stream, const absl::Status& status) {
  std::vector<std::pair<Pending, absl::Status>> failed;  // with the error to finish with, if any
  {
    absl::MutexLock l(&mu_);
    auto it = streams_.find(stream->pchannel());
    if (it != streams_.end() && it->second.get() == stream) {
      dead_streams_.push_back(it->second);
      streams_.erase(it);
    }
    for (auto it2 = pending_.begin(); it2 != pending_.end();) {
      if (it2->second.stream.get() == stream) {
        timer_.Cancel(it2->second.timeout);
        failed.emplace_back(std::move(it2->second), absl::OkStatus());
        pending_.erase(it2++);
      } else {
        ++it2;
      }
    }
    // In the same critical section as the removal: no new stream can carry a later message
    // before these are back in their lane.
    for (auto& [p, final] : failed) final = FailAttemptLocked(p.op, status);
    stream->MarkFailuresReported();
  }
  for (auto& [p, final] : failed) {
    p.span->RecordError(status);
    p.span->End();
    if (!final.ok()) Finish(p.op, final);
  }
}

void ProducerImpl::OnAttemptTimeout(const std::shared_ptr<Op>& op, uint64_t request_id) {
  Pending p;
  {
    absl::MutexLock l(&mu_);
    auto it = pending_.find(request_id);
    if (it == pending_.end()) return;  // answered in time
    p = std::move(it->second);
    pending_.erase(it);
  }
  absl::Status s = absl::DeadlineExceededError("append attempt timed out");
  p.span->RecordError(s);
  p.span->End();
  // The stream may be stuck: reset it. Its other attempts fail as UNAVAILABLE and are
  // retried with their own keys, which the WAL deduplicates.
  p.stream->Cancel();
  AttemptDone(op, s);
}

void ProducerImpl::AttemptDone(const std::shared_ptr<Op>& op,
                               absl::StatusOr<kingfisher::AppendResult> r) {
  if (r.ok()) return Finish(op, std::move(r));
  absl::Status final;
  {
    absl::MutexLock l(&mu_);
    final = FailAttemptLocked(op, r.status());
  }
  if (!final.ok()) Finish(op, final);
}

absl::Status ProducerImpl::FailAttemptLocked(const std::shared_ptr<Op>& op, const absl::Status& s) {
  if (IsAmbiguous(s)) op->maybe_appended = true;
  op->last_error = s;
  // The node no longer serves the pchannel at the term we used: wait for a newer assignment.
  // Anything else (including that wait timing out) retries on the current one.
  op->stale_version = IsRoutingError(s) ? op->route_version : 0;
  const int max = client_options_.retry.max_attempts;
  if (!IsRetryableAppendError(s) || closed_ || (max > 0 && op->attempts >= max)) {
    if (IsRetryableAppendError(s) || s.code() == absl::StatusCode::kCancelled) {
      return WithContext(
          s, op->maybe_appended ? "; the message may or may not have been appended" : "");
    }
    return s;
  }
  WaitInLaneLocked(op, std::min(op->deadline, absl::Now() + op->backoff.Next()));
  return absl::OkStatus();
}

void ProducerImpl::Finish(const std::shared_ptr<Op>& op,
                          absl::StatusOr<kingfisher::AppendResult> r) {
  {
    absl::MutexLock l(&mu_);
    if (op->finished) return;
    op->finished = true;
    ops_.erase(op->sequence);
  }
  if (op->prepared) {  // an attempt prepared but never sent
    op->prepared->span->RecordError(r.ok() ? absl::CancelledError("not sent") : r.status());
    op->prepared->span->End();
    op->prepared.reset();
  }
  if (r.ok() && session_ != nullptr && IsSessionWrite(op->message.type())) {
    session_->Acknowledged(op->message.vchannel(), r->timetick.value());
  }
  if (op->logical_span) {
    if (r.ok()) {
      op->logical_span->SetAttribute("message.timetick", static_cast<int64_t>(r->timetick.value()));
    } else {
      op->logical_span->RecordError(r.status());
    }
    op->logical_span->End();
  }
  auto done = std::move(op->done);
  op->done = nullptr;
  if (done) std::move(done)(std::move(r));
}

void ProducerImpl::Close() {
  {
    absl::MutexLock l(&mu_);
    closed_ = true;  // new appends fail; pending ones finish (retries stop at the next error)
    mu_.Await(absl::Condition(
        +[](ProducerImpl* p) ABSL_NO_THREAD_SAFETY_ANALYSIS { return p->ops_.empty(); }, this));
  }
  timer_.Stop();
  std::map<std::string, std::shared_ptr<ProduceStream>, std::less<>> streams;
  {
    absl::MutexLock l(&mu_);
    streams.swap(streams_);
  }
  for (auto& [name, s] : streams) s->Cancel();
  for (auto& [name, s] : streams) s->Join();
  std::vector<std::shared_ptr<ProduceStream>> dead;
  {
    absl::MutexLock l(&mu_);
    dead.swap(dead_streams_);
  }
  for (auto& s : dead) {
    s->Cancel();
    s->Join();
  }
}

}  // namespace kf::client
