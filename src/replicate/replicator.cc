#include "replicate/replicator.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/retry.h"
#include "client/router.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "grpcpp/client_context.h"
#include "kingfisher/v1/replicate.grpc.pb.h"
#include "message/message_trace.h"
#include "message/properties.h"
#include "message/replicate_config.h"
#include "spdlog/spdlog.h"
#include "wal/txn/txn_message.h"
#include "wire/channel_args.h"
#include "wire/credentials.h"
#include "wire/status_convert.h"

namespace kf::replicate {

// The secondary, as a session reaches it.
class Peer {
 public:
  Peer(const std::string& endpoint, std::shared_ptr<grpc::ChannelCredentials> credentials)
      : router(endpoint, wire::PeerChannelArguments(), wire::OrPlaintext(std::move(credentials))) {}
  client::Router router;
  int64_t after_version = 0;  // a routing error asks for a newer assignment than this
};

namespace {

// Whether `secondary` gets `m` at all (docs/replication.md "The primary"). A piece of a
// transaction outside a Txn is one the reader started inside of: reading from the checkpoint's
// LCMID, that transaction ended at or before the checkpoint, so it is already there. A message
// replicated here from `secondary` (this cluster was its secondary before) came from there.
bool Replicated(const ImmutableMessage& m, const std::string& secondary) {
  const MessageType t = m.type();
  if (t != MessageType::kTxn &&
      (t == MessageType::kBeginTxn || IsTxnControlType(t) || m.message().HasProperty(prop::kTxn))) {
    return false;
  }
  if (m.message().HasProperty(prop::kReplicate)) {
    auto h = m.message().replicate_header();
    if (h.has_value() && h->cluster_id() == secondary) return false;
  }
  return t != MessageType::kTimeTick && t != MessageType::kAlterReplicateConfig &&
         !IsSelfControlledType(t) && !m.message().HasProperty(prop::kNoReplicate);
}

// Where a session resumes once `m` is on the secondary: its LCMID (a Txn's Begin's, at or
// before its Commit's, which is what the secondary's checkpoint keeps).
MessageId ResumeFrom(const ImmutableMessage& m) {
  const ImmutableMessage* first = &m;
  if (const wal::TxnMessage* txn = wal::AsTxnMessage(m); txn != nullptr && !txn->inner().empty()) {
    first = txn->inner().front().get();
  }
  return first->last_confirmed().valid() ? first->last_confirmed() : first->id();
}

// `m` on the wire, read remotely: its `_tc` (and a Txn's inner ones) is a `wal.dist_consume`
// span, child of its own.
void Encode(const ImmutableMessage& m, kingfisher::v1::ConsumedMessage* out) {
  auto [ctx, span] =
      StartSpanForMessage(ExtractTraceContext(trace::Context(), m.message()), &m.message(),
                          "wal.dist_consume", trace::SpanKind::kConsumer);
  span->End();
  out->set_message_id(m.id().Encode());
  EncodeWithTraceContext(ctx, m.message(), out->mutable_message());
  if (const wal::TxnMessage* txn = wal::AsTxnMessage(m)) {
    for (const ImmutableMessagePtr& inner : txn->inner()) {
      kingfisher::v1::ConsumedMessage* c = out->add_inner();
      c->set_message_id(inner->id().Encode());
      EncodeWithTraceContext(ctx, inner->message(), c->mutable_message());
    }
  }
}

// Cancels `ctx` when `stop` is requested.
class CancelOnStop {
 public:
  CancelOnStop(std::stop_token stop, grpc::ClientContext* ctx)
      : callback_(std::move(stop), [ctx] { ctx->TryCancel(); }) {}

 private:
  std::stop_callback<std::function<void()>> callback_;
};

}  // namespace

Replicator::Replicator(Options options, std::shared_ptr<wal::Wal> wal)
    : options_(std::move(options)), wal_(std::move(wal)) {
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

Replicator::~Replicator() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

bool Replicator::EndsHere(const ImmutableMessage& alter) const {
  const kingfisher::v1::WalReplicateState state = wal_->replicate_state();
  if (HasEdge(state.config(), options_.cluster_id, options_.secondary_id)) return false;
  // Configured out: exactly at the AlterReplicateConfig that dropped the edge (an older one
  // without it, from before the edge existed, ends nothing).
  for (const kingfisher::v1::ReplicateHandover& h : state.handovers()) {
    if (h.target_cluster_id() == options_.secondary_id) {
      return alter.timetick().value() == h.time_tick();
    }
  }
  kingfisher::v1::ReplicateConfiguration config;  // a state without the record: the first
  return config.ParseFromString(alter.message().payload()) &&
         !HasEdge(config, options_.cluster_id, options_.secondary_id);
}

Replicator::Progress Replicator::progress() const {
  absl::MutexLock lock(&mu_);
  return progress_;
}

bool Replicator::running() const {
  absl::MutexLock lock(&mu_);
  return !ended_;
}

void Replicator::Update(const std::function<void(Progress&)>& change) {
  absl::MutexLock lock(&mu_);
  change(progress_);
  progress_.updated = absl::Now();
}

void Replicator::Loop(std::stop_token stop) {
  const std::string what = absl::StrCat("replicate ", options_.pchannel, " -> ",
                                        options_.secondary_id, "/", options_.secondary_pchannel);
  spdlog::info("{}: started (secondary endpoint {})", what, options_.secondary_endpoint);
  Peer peer(options_.secondary_endpoint, options_.credentials);
  absl::Duration backoff = options_.backoff_initial;
  bool handed_over = false, fenced = false;
  absl::Mutex sleep_mu;
  absl::CondVar wake;
  std::stop_callback on_stop(stop, [&] {
    absl::MutexLock l(&sleep_mu);
    wake.SignalAll();
  });
  while (!stop.stop_requested()) {
    const Ended ended = Session(stop, peer);
    if (stop.stop_requested()) break;
    if (ended.final) {
      spdlog::info("{}: stopping: {}", what, ended.status.ToString());
      handed_over = ended.handed_over;
      fenced = ended.fenced;
      Update([&](Progress& p) { p.last_error = fenced ? ended.status.ToString() : ""; });
      break;
    }
    if (ended.progressed) backoff = options_.backoff_initial;
    spdlog::warn("{}: session ended, retrying in {}: {}", what, absl::FormatDuration(backoff),
                 ended.status.ToString());
    Update([&](Progress& p) {
      p.state = ended.fenced ? "fenced" : "retrying";
      p.last_error = ended.status.ToString();
      p.pending = 0;
    });
    absl::MutexLock l(&sleep_mu);
    if (!stop.stop_requested()) wake.WaitWithTimeout(&sleep_mu, backoff);
    backoff = std::min(backoff * 2, options_.backoff_max);
  }
  absl::MutexLock lock(&mu_);
  ended_ = true;
  progress_.state = handed_over ? "handed_over" : fenced ? "fenced" : "stopped";
  progress_.updated = absl::Now();
}

Replicator::Ended Replicator::Session(std::stop_token stop, Peer& peer) {
  Ended ended;
  ended.status = SessionOnce(stop, peer, ended);
  return ended;
}

absl::Status Replicator::SessionOnce(std::stop_token stop, Peer& peer, Ended& ended) {
  // The local WAL's errors end the replicator when the WAL is closed or broken (its manager
  // starts one on the WAL that replaces it); the secondary's never do. A closed WAL answers
  // ON_SHUTDOWN, or a routing error when its node lost the pchannel (Wal::Close).
  auto local = [&](absl::Status s) {
    const StreamingCode code = GetStreamingCode(s);
    ended.final = !wal_->Health().ok() || code == StreamingCode::kOnShutdown ||
                  code == StreamingCode::kChannelNotExist ||
                  code == StreamingCode::kUnmatchedChannelTerm || absl::IsCancelled(s);
    return s;
  };
  Update([](Progress& p) { p.state = "connecting"; });
  absl::StatusOr<client::Router::Route> route = peer.router.Resolve(
      options_.secondary_pchannel, peer.after_version, absl::Now() + options_.call_timeout,
      [&stop] { return stop.stop_requested(); });
  if (!route.ok()) {
    // No newer assignment came: the routing error may not have been a move (the pchannel's WAL
    // was still opening on a restarted node, whose assignment then never changes). Take the
    // current one next time; the node's term check still refuses a stale route.
    peer.after_version = 0;
    return route.status();
  }
  auto stub = kingfisher::v1::Replicate::NewStub(route->node->channel);
  auto routed = [&](absl::Status s) {
    if (client::IsRoutingError(s)) peer.after_version = route->version;
    return s;
  };

  kingfisher::v1::GetReplicateCheckpointRequest ask;
  ask.set_pchannel(options_.secondary_pchannel);
  ask.set_term(route->term);
  ask.set_source_cluster_id(options_.cluster_id);
  kingfisher::v1::GetReplicateCheckpointResponse checkpoint;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + options_.call_timeout));
    CancelOnStop cancel(stop, &ctx);
    absl::Status s = wire::FromGrpcStatus(stub->GetCheckpoint(&ctx, ask, &checkpoint));
    if (!s.ok()) return routed(s);
  }
  wal::ScanOptions scan{.internal = true};
  uint64_t previous = 0;
  MessageId resume;  // what the WAL keeps for this secondary: from the start
  if (checkpoint.found()) {
    absl::StatusOr<MessageId> from =
        MessageId::Decode(checkpoint.checkpoint().last_confirmed_message_id());
    if (!from.ok()) return from.status();
    scan.policy = {.kind = wal::DeliverPolicy::Kind::kStartFrom, .id = *from};
    previous = checkpoint.checkpoint().time_tick();
    resume = *from;
  }
  wal_->HoldForReplication(options_.secondary_id, resume);
  // Fenced: a secondary promoted without this cluster (a failover) or reconfigured takes
  // nothing from it (its WAL would refuse every message anyway). While this WAL's
  // configuration still has the edge, the session ends here and is retried; once it does not,
  // a replicator handing over reads on, and is done: handed over if the peer already has
  // everything before that change, fenced if there is anything left to send.
  const ReplicateRole role = RoleOf(checkpoint.state().config(), options_.secondary_id);
  const bool peer_fenced =
      role.kind != ReplicateRole::Kind::kSecondary || role.primary_id != options_.cluster_id;
  const bool configured_in =
      HasEdge(wal_->replicate_state().config(), options_.cluster_id, options_.secondary_id);
  auto fenced = [&] {
    ended.fenced = true;
    ended.final = !configured_in;
    if (ended.final) wal_->HoldForReplication(options_.secondary_id, std::nullopt);
    return StreamingError(
        StreamingCode::kReplicateViolation,
        absl::StrCat("cluster ", options_.secondary_id, " is not a secondary of ",
                     options_.cluster_id, " in its own replicate configuration (it is ",
                     ToAbsl(ReplicateRoleName(role.kind)),
                     role.kind == ReplicateRole::Kind::kSecondary ? " of " + role.primary_id : "",
                     "): nothing is sent; reconfigure this cluster (`kfctl replicate configure`)"));
  };
  if (peer_fenced && configured_in) return fenced();
  absl::StatusOr<std::unique_ptr<wal::Scanner>> scanner = wal_->Read(scan);
  if (!scanner.ok()) return local(scanner.status());
  Update([&](Progress& p) {
    p.state = "replicating";
    p.checkpoint_tt = previous;
  });

  while (!stop.stop_requested()) {
    kingfisher::v1::ReplicateAppendRequest request;
    request.set_pchannel(options_.secondary_pchannel);
    request.set_term(route->term);
    request.set_source_cluster_id(options_.cluster_id);
    request.set_source_pchannel(options_.pchannel);
    request.set_previous_time_tick(previous);
    size_t bytes = 0;
    bool configured_out = false;     // read the AlterReplicateConfig that ends this replication
    std::vector<MessageId> resumes;  // ResumeFrom of each message in `request`
    absl::Time wait_until = absl::Now() + absl::Milliseconds(200);  // the first one only
    while (request.messages_size() < options_.max_batch_messages &&
           bytes < options_.max_batch_bytes) {
      absl::StatusOr<ImmutableMessagePtr> next = (*scanner)->Next(trace::Context(), wait_until);
      if (absl::IsDeadlineExceeded(next.status())) break;
      if (!next.ok()) return local(next.status());
      const ImmutableMessage& m = **next;
      // At or below the checkpoint (the scan starts at its LCMID): the secondary has it, and
      // an AlterReplicateConfig there is older than what it has, so it ends nothing.
      if (m.timetick().value() <= previous) continue;
      if (m.type() == MessageType::kAlterReplicateConfig && EndsHere(m)) {
        configured_out = true;
        break;
      }
      if (!Replicated(m, options_.secondary_id)) continue;
      Encode(m, request.add_messages());
      resumes.push_back(ResumeFrom(m));
      bytes += request.messages(request.messages_size() - 1).ByteSizeLong();
      previous = m.timetick().value();
      wait_until = absl::InfinitePast();
    }
    auto hand_over = [&] {
      ended.final = true;
      ended.handed_over = true;
      wal_->HoldForReplication(options_.secondary_id, std::nullopt);
      return absl::CancelledError(
          "the replicate configuration no longer replicates this pchannel there; everything "
          "before that change was sent");
    };
    if (request.messages_size() == 0 && configured_out) return hand_over();
    if (request.messages_size() == 0) continue;
    if (peer_fenced) return fenced();
    const auto sent = static_cast<uint64_t>(request.messages_size());
    Update([&](Progress& p) { p.pending = sent; });
    kingfisher::v1::ReplicateAppendResponse response;
    {
      grpc::ClientContext ctx;
      ctx.set_deadline(absl::ToChronoTime(absl::Now() + options_.call_timeout));
      CancelOnStop cancel(stop, &ctx);
      absl::Status s = wire::FromGrpcStatus(stub->Append(&ctx, request, &response));
      if (!s.ok()) return routed(s);
    }
    uint64_t appended = 0, ignored = 0, at = request.previous_time_tick();
    // The secondary has the first `n` messages: the WAL may let go below the last one's LCMID.
    auto taken = [&](uint64_t n) {
      if (n > 0 && n <= resumes.size()) {
        wal_->HoldForReplication(options_.secondary_id, resumes[n - 1]);
      }
    };
    for (const kingfisher::v1::ReplicateResult& r : response.results()) {
      if (r.has_error()) {
        absl::Status s = wire::FromProtoError(r.error());
        if (GetStreamingCode(s) != StreamingCode::kIgnoredOperation) {
          taken(appended + ignored);
          Update([&](Progress& p) {
            p.replicated += appended;
            p.ignored += ignored;
            p.checkpoint_tt = at;
          });
          ended.progressed = ended.progressed || appended + ignored > 0;
          return routed(s);
        }
        ++ignored;
      } else {
        ++appended;
      }
      at = r.source_time_tick();
    }
    taken(appended + ignored);
    Update([&](Progress& p) {
      p.replicated += appended;
      p.ignored += ignored;
      p.checkpoint_tt = at;
      p.pending = 0;
      p.last_error.clear();
    });
    ended.progressed = ended.progressed || appended + ignored > 0;
    if (static_cast<uint64_t>(response.results_size()) < sent) {
      return absl::UnavailableError(absl::StrCat("the secondary answered ", response.results_size(),
                                                 " of ", sent, " messages without an error"));
    }
    // The scanner is past the AlterReplicateConfig: what came before it is all on the secondary.
    if (configured_out) return hand_over();
  }
  return absl::OkStatus();
}

}  // namespace kf::replicate
