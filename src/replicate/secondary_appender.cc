#include "replicate/secondary_appender.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "message/message_id.h"
#include "message/message_trace.h"
#include "message/payload.h"
#include "message/properties.h"
#include "message/replicate_config.h"
#include "message/vchannel_name.h"
#include "spdlog/spdlog.h"
#include "wire/status_convert.h"

namespace kf::replicate {
namespace {

using kingfisher::v1::ConsumedMessage;
using kingfisher::v1::ReplicateAppendRequest;
using kingfisher::v1::ReplicateAppendResponse;

absl::Status Invalid(const std::string& message) {
  return StreamingError(StreamingCode::kInvalidArgument, message);
}

// One source message as this cluster appends it.
struct Replica {
  MutableMessage msg;
  uint64_t source_tt = 0;
  // A copy of a DDL broadcast of the source: its `_bh` there, and its vchannel there.
  std::optional<kingfisher::v1::BroadcastHeader> source_broadcast;
  std::string source_vchannel;
};

// `vchannel` of the source cluster as this cluster names it: the same name after the pchannel,
// on the pchannel at the same index (`config`, the secondary WAL's replicate configuration).
absl::StatusOr<std::string> PeerVChannel(const kingfisher::v1::ReplicateConfiguration& config,
                                         const ReplicateAppendRequest& r,
                                         std::string_view vchannel) {
  absl::StatusOr<std::string> pchannel = PChannelOfVChannel(vchannel);
  std::optional<std::string> here = ClusterOfPChannel(config, r.pchannel());
  std::optional<std::string> peer =
      pchannel.ok() && here.has_value()
          ? PeerPChannel(config, r.source_cluster_id(), *pchannel, *here)
          : std::nullopt;
  if (!peer.has_value()) {
    return Invalid(absl::StrCat("replicated vchannel ", ToAbsl(vchannel),
                                " is on no pchannel of cluster ", r.source_cluster_id(),
                                " that the replicate configuration maps here"));
  }
  return absl::StrCat(*peer, ToAbsl(vchannel.substr(pchannel->size())));
}

absl::StatusOr<Replica> ToReplica(const ConsumedMessage& in, const ReplicateAppendRequest& r,
                                  const kingfisher::v1::ReplicateConfiguration& config,
                                  uint64_t previous) {
  absl::StatusOr<MutableMessage> msg = MutableMessage::Decode(in.message());
  if (!msg.ok())
    return Invalid(absl::StrCat("a replicated message does not decode: ", msg.status().message()));
  absl::StatusOr<MessageId> id = MessageId::Decode(in.message_id());
  std::optional<TimeTick> tt = msg->timetick();
  if (!id.ok() || !tt.has_value()) {
    return Invalid("a replicated message has no source id or timetick");
  }
  if (msg->type() == MessageType::kTimeTick || msg->type() == MessageType::kTxn) {
    return Invalid(
        absl::StrCat("a ", ToAbsl(MessageTypeName(msg->type())), " is never replicated as such"));
  }
  const MessageId lcmid =
      msg->HasProperty(prop::kLastConfirmedSelf) ? *id : msg->last_confirmed().value_or(*id);
  kingfisher::v1::ReplicateHeader h;
  h.set_cluster_id(r.source_cluster_id());
  h.set_message_id(in.message_id());
  h.set_last_confirmed_message_id(lcmid.Encode());
  h.set_time_tick(tt->value());
  h.set_vchannel(std::string(msg->vchannel()));
  h.set_previous_time_tick(previous);
  Replica out;
  out.source_broadcast = msg->broadcast_header();
  out.source_vchannel = std::string(msg->vchannel());
  if (const std::string_view vc = msg->vchannel(); !vc.empty()) {
    const std::string prefix = r.source_pchannel() + "_";
    if (!vc.starts_with(prefix)) {
      return Invalid(absl::StrCat("replicated vchannel ", ToAbsl(vc), " is not on source pchannel ",
                                  r.source_pchannel()));
    }
    msg->set_vchannel(absl::StrCat(r.pchannel(), ToAbsl(vc.substr(r.source_pchannel().size()))));
  }
  if (msg->type() == MessageType::kCreateCollection) {
    // The schema lists the collection's vchannels, each shard's on its own pchannel.
    absl::StatusOr<kingfisher::v1::CollectionSchema> schema =
        DecodeCollectionSchema(msg->payload());
    if (!schema.ok()) return schema.status();
    for (std::string& vc : *schema->mutable_vchannels()) {
      absl::StatusOr<std::string> peer = PeerVChannel(config, r, vc);
      if (!peer.ok()) return peer.status();
      vc = *std::move(peer);
    }
    *msg->mutable_payload() = schema->SerializeAsString();
  }
  // The source WAL's stamps, and the source's dedup keys: `_ik` and `_bh` name producers and
  // broadcasts of the source cluster, which this cluster's own tables must not confuse with its
  // own (a broadcast id of both clusters, a retried Begin of a txn that died here); the
  // checkpoint in `_rh` is what deduplicates a replicated message.
  for (std::string_view key :
       {prop::kTimeTick, prop::kLastConfirmed, prop::kLastConfirmedSelf, prop::kWalTerm,
        prop::kNotPersisted, prop::kIdempotencyKey, prop::kBroadcast}) {
    msg->EraseProperty(key);
  }
  msg->set_replicate_header(h);
  out.msg = *std::move(msg);
  out.source_tt = tt->value();
  return out;
}

// Appends `replicas` as one batch, each under `replicate.secondary` > `wal.autocommit`, and
// waits for every answer.
std::vector<absl::StatusOr<wal::AppendResult>> AppendAll(wal::Wal& wal,
                                                         std::vector<Replica> replicas,
                                                         const trace::Context& ctx) {
  struct Waiter {
    absl::Mutex mu;
    size_t left;
    std::vector<absl::StatusOr<wal::AppendResult>> results;
  };
  auto waiter = std::make_shared<Waiter>();
  waiter->left = replicas.size();
  waiter->results.resize(replicas.size(), absl::UnknownError("not answered"));
  std::vector<wal::AppendRequest> requests;
  requests.reserve(replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) {
    MutableMessage& m = replicas[i].msg;
    auto [received, receive_span] = StartSpanForMessage(
        ExtractTraceContext(ctx, m), &m, "replicate.secondary", trace::SpanKind::kConsumer);
    auto [logical, logical_span] =
        StartSpanForMessage(received, &m, "wal.autocommit", trace::SpanKind::kProducer);
    requests.push_back({.ctx = logical,
                        .msg = std::move(m),
                        .done = [waiter, i, receive_span = std::move(receive_span),
                                 logical_span = std::move(logical_span)](
                                    absl::StatusOr<wal::AppendResult> r) mutable {
                          if (!r.ok()) logical_span->RecordError(r.status());
                          logical_span->End();
                          receive_span->End();
                          absl::MutexLock lock(&waiter->mu);
                          waiter->results[i] = std::move(r);
                          --waiter->left;
                        }});
  }
  wal.AppendBatch(std::move(requests));
  absl::MutexLock lock(&waiter->mu);
  waiter->mu.Await(absl::Condition(
      +[](size_t* left) { return *left == 0; }, &waiter->left));
  return std::move(waiter->results);
}

// Appends one request's messages in order, stopping at the first failure.
class Appender {
 public:
  Appender(wal::Wal& wal, const ReplicateAppendRequest& r, const trace::Context& ctx,
           const DdlPieces* pieces)
      : wal_(wal),
        r_(r),
        ctx_(ctx),
        pieces_(pieces),
        config_(wal.replicate_state().config()),
        previous_(r.previous_time_tick()) {}

  ReplicateAppendResponse Run() && {
    std::vector<Replica> run;
    bool ok = true;
    for (const ConsumedMessage& in : r_.messages()) {
      if (in.inner_size() > 0) {
        ok = Plain(std::exchange(run, {})) && Txn(in);
      } else if (absl::StatusOr<Replica> replica = ToReplica(in, r_, config_, previous_);
                 replica.ok()) {
        previous_ = replica->source_tt;
        if (!replica->source_broadcast.has_value() || pieces_ == nullptr) {
          run.push_back(*std::move(replica));
          continue;
        }
        ok = Plain(std::exchange(run, {})) && Ddl(*std::move(replica));
      } else {
        ok = Plain(std::exchange(run, {})) && Record(replica.status(), 0);
      }
      if (!ok) break;
    }
    if (ok) Plain(std::move(run));
    return std::move(out_);
  }

 private:
  // Messages outside transactions, as one batch. False once one failed.
  bool Plain(std::vector<Replica> run) {
    if (run.empty()) return true;
    std::vector<uint64_t> tts;
    for (const Replica& r : run) tts.push_back(r.source_tt);
    const auto results = AppendAll(wal_, std::move(run), ctx_);
    for (size_t i = 0; i < results.size(); ++i) {
      if (!Record(results[i], tts[i])) return false;
    }
    return true;
  }

  // A copy of a DDL broadcast, alone, recorded before and after (ddl_pieces.h).
  bool Ddl(Replica replica) {
    const kingfisher::v1::BroadcastHeader& bh = *replica.source_broadcast;
    kingfisher::v1::ReplicatedDdlPiece piece;
    piece.set_source_cluster_id(r_.source_cluster_id());
    piece.set_source_broadcast_id(bh.broadcast_id());
    piece.set_vchannel_count(bh.vchannels_size());
    const auto it =
        std::find(bh.vchannels().begin(), bh.vchannels().end(), replica.source_vchannel);
    if (it == bh.vchannels().end()) {
      return Record(Invalid(absl::StrCat("a replicated broadcast's vchannel ",
                                         replica.source_vchannel, " is not in its `_bh`")),
                    replica.source_tt);
    }
    piece.set_index(static_cast<uint32_t>(it - bh.vchannels().begin()));
    piece.set_message(replica.msg.Encode());
    piece.set_pchannel(r_.pchannel());
    piece.set_source_time_tick(replica.source_tt);
    const uint64_t tt = replica.source_tt;
    if (!DdlPieces::InLog(wal_, piece)) {  // else it is only answered IGNORED_OPERATION
      if (absl::Status s = pieces_->Offer(piece); !s.ok()) {
        return Record(absl::UnavailableError(absl::StrCat("recording the copy of DDL broadcast ",
                                                          bh.broadcast_id(),
                                                          " before appending it: ", s.message())),
                      tt);
      }
    }
    std::vector<Replica> one;
    one.push_back(std::move(replica));
    // `bh` goes with `replica`: use `piece` from here on.
    if (!Record(AppendAll(wal_, std::move(one), ctx_)[0], tt)) return false;
    if (absl::Status s = pieces_->MarkLanded(piece); !s.ok()) {
      spdlog::warn(
          "replicate: marking the copy of DDL broadcast {} on {} landed failed ({}); "
          "the node marks it later",
          piece.source_broadcast_id(), r_.pchannel(), s.ToString());
    }
    return true;
  }

  // A committed source transaction as a txn of this WAL.
  bool Txn(const ConsumedMessage& txn) {
    std::vector<Replica> replicas;
    for (const ConsumedMessage& in : txn.inner()) {
      absl::StatusOr<Replica> replica = ToReplica(in, r_, config_, previous_);
      if (!replica.ok()) return Record(replica.status(), 0);
      replicas.push_back(*std::move(replica));
    }
    if (replicas.size() < 2 || replicas.front().msg.type() != MessageType::kBeginTxn ||
        !replicas.front().msg.txn().has_value() ||
        replicas.back().msg.type() != MessageType::kCommitTxn) {
      return Record(Invalid("a replicated Txn is not Begin, bodies, Commit"), 0);
    }
    const uint64_t commit_tt = replicas.back().source_tt;
    const std::string vchannel(replicas.front().msg.vchannel());
    kingfisher::v1::TxnContext begin = *replicas.front().msg.txn();
    begin.set_txn_id(0);  // this WAL assigns its own
    replicas.front().msg.set_txn(begin);
    std::vector<Replica> one;
    one.push_back(std::move(replicas.front()));
    absl::StatusOr<wal::AppendResult> begun = std::move(AppendAll(wal_, std::move(one), ctx_)[0]);
    if (!begun.ok()) return Record(begun, commit_tt);
    if (!begun->txn.has_value())
      return Record(absl::InternalError("BeginTxn gave no txn"), commit_tt);
    const kingfisher::v1::TxnContext mine = *begun->txn;
    std::vector<Replica> bodies;
    for (size_t i = 1; i + 1 < replicas.size(); ++i) {
      replicas[i].msg.set_txn(mine);
      bodies.push_back(std::move(replicas[i]));
    }
    for (absl::StatusOr<wal::AppendResult>& r : AppendAll(wal_, std::move(bodies), ctx_)) {
      if (!r.ok()) {
        Rollback(vchannel, mine);
        Record(r, commit_tt);
        return false;
      }
    }
    replicas.back().msg.set_txn(mine);
    one.clear();
    one.push_back(std::move(replicas.back()));
    absl::StatusOr<wal::AppendResult> committed =
        std::move(AppendAll(wal_, std::move(one), ctx_)[0]);
    if (!committed.ok()) Rollback(vchannel, mine);  // refused (a duplicate too): end it now
    previous_ = commit_tt;
    return Record(committed, commit_tt);
  }

  // One message's result; false if it failed (IGNORED_OPERATION is not a failure).
  bool Record(const absl::StatusOr<wal::AppendResult>& r, uint64_t source_tt) {
    kingfisher::v1::ReplicateResult* out = out_.add_results();
    out->set_source_time_tick(source_tt);
    if (r.ok()) return true;
    *out->mutable_error() = wire::ToProtoError(r.status());
    return GetStreamingCode(r.status()) == StreamingCode::kIgnoredOperation;
  }

  // Ends a txn of this WAL that will not commit (else it would expire at its keepalive).
  void Rollback(const std::string& vchannel, const kingfisher::v1::TxnContext& txn) {
    MutableMessage rollback(MessageType::kRollbackTxn, "");
    rollback.set_vchannel(vchannel);
    rollback.set_txn(txn);
    (void)wal_.AppendSync(ctx_, std::move(rollback));
  }

  wal::Wal& wal_;
  const ReplicateAppendRequest& r_;
  const trace::Context& ctx_;
  const DdlPieces* const pieces_;
  const kingfisher::v1::ReplicateConfiguration config_;  // the WAL's, for DDL's vchannels
  uint64_t previous_;
  ReplicateAppendResponse out_;
};

}  // namespace

kingfisher::v1::ReplicateAppendResponse AppendReplicated(wal::Wal& wal,
                                                         const ReplicateAppendRequest& request,
                                                         const trace::Context& ctx,
                                                         const DdlPieces* pieces) {
  return Appender(wal, request, ctx, pieces).Run();
}

}  // namespace kf::replicate
