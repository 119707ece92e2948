#include "wal/replicate_state.h"

#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "message/message_id.h"
#include "message/properties.h"

namespace kf::wal {
namespace {

absl::Status Violation(const std::string& message) {
  return StreamingError(StreamingCode::kReplicateViolation, message);
}

std::string SourceText(const kingfisher::v1::ReplicateCheckpoint& c) {
  auto id = MessageId::Decode(c.message_id());
  return absl::StrCat(c.cluster_id(), " timetick ", c.time_tick(), " id ",
                      id.ok() ? id->ToText() : "?");
}

}  // namespace

absl::Status ReplicateState::Prepare(const MutableMessage& m, ReplicateAppend* out) {
  out->type = m.type();
  if (out->type == MessageType::kAlterReplicateConfig) {
    auto config = std::make_shared<kingfisher::v1::ReplicateConfiguration>();
    if (!config->ParseFromString(m.payload())) {
      return StreamingError(StreamingCode::kInvalidArgument,
                            "AlterReplicateConfig: the payload is not a ReplicateConfiguration");
    }
    if (absl::Status bad = ValidateReplicateConfig(*config); !bad.ok()) return bad;
    out->config = std::move(config);
    out->replicated = m.HasProperty(prop::kReplicate);  // refused by Check
    return absl::OkStatus();
  }
  if (!m.HasProperty(prop::kReplicate)) return absl::OkStatus();
  std::optional<kingfisher::v1::ReplicateHeader> h = m.replicate_header();
  if (!h.has_value() || h->cluster_id().empty() || !MessageId::Decode(h->message_id()).ok()) {
    return StreamingError(StreamingCode::kInvalidArgument,
                          "property '_rh' is not a ReplicateHeader with a cluster id and a "
                          "decodable message id");
  }
  out->replicated = true;
  out->advances = out->type == MessageType::kCommitTxn || out->type == MessageType::kTxn ||
                  (out->type != MessageType::kBeginTxn && !IsTxnControlType(out->type) &&
                   !m.HasProperty(prop::kTxn));
  out->source.emplace();
  out->source->set_cluster_id(h->cluster_id());
  out->source->set_message_id(h->message_id());
  out->source->set_time_tick(h->time_tick());
  out->source->set_last_confirmed_message_id(h->last_confirmed_message_id());
  out->previous_time_tick = h->previous_time_tick();
  return absl::OkStatus();
}

absl::Status ReplicateState::Check(const ReplicateAppend& a) const {
  if (a.type == MessageType::kAlterReplicateConfig) {
    if (!a.replicated) return absl::OkStatus();
    return Violation("an AlterReplicateConfig is never replicated: each cluster gets its own");
  }
  if (!a.replicated) {
    // The WAL's and the node's own messages (TimeTick, CreateSegment, Flush) and the end of a
    // replicated txn that will not commit.
    if (!secondary() || IsSelfControlledType(a.type) || a.type == MessageType::kRollbackTxn) {
      return absl::OkStatus();
    }
    return Violation(absl::StrCat("cluster ", cluster_id_, " is a secondary of cluster ",
                                  role_.primary_id, " (", role_.primary_endpoint,
                                  "): it takes writes only by replication; write to the primary"));
  }
  if (!secondary()) {
    return Violation(absl::StrCat(
        "a replicated message (property '_rh', from cluster ", a.source->cluster_id(),
        ") reached cluster ", cluster_id_.empty() ? "(no cluster id)" : cluster_id_,
        ", which is not a secondary (role ", ToAbsl(ReplicateRoleName(role_.kind)), ")"));
  }
  if (a.source->cluster_id() != role_.primary_id) {
    return Violation(absl::StrCat("a message replicated from cluster ", a.source->cluster_id(),
                                  " reached cluster ", cluster_id_, ", whose primary is ",
                                  role_.primary_id));
  }
  if (!a.advances) return absl::OkStatus();
  auto it = checkpoints_.find(a.source->cluster_id());
  const uint64_t at = it == checkpoints_.end() ? 0 : it->second.time_tick();
  if (it != checkpoints_.end() && a.source->time_tick() <= at) {
    return StreamingError(StreamingCode::kIgnoredOperation,
                          absl::StrCat("already replicated: ", SourceText(*a.source),
                                       " is at or below the checkpoint ", SourceText(it->second)));
  }
  if (a.previous_time_tick != at) {
    return Violation(absl::StrCat("out of order: ", SourceText(*a.source), " follows timetick ",
                                  a.previous_time_tick, " but the checkpoint is at ", at,
                                  "; the replicator resumes from the checkpoint"));
  }
  return absl::OkStatus();
}

void ReplicateState::Apply(const ReplicateAppend& a) {
  if (a.config != nullptr) {
    for (const kingfisher::v1::ReplicateTopologyEdge& e : config_.topology()) {
      if (e.source_cluster_id() != cluster_id_ ||
          HasEdge(*a.config, cluster_id_, e.target_cluster_id())) {
        continue;
      }
      kingfisher::v1::ReplicateHandover& h = handovers_[e.target_cluster_id()];
      h.set_target_cluster_id(e.target_cluster_id());
      h.set_time_tick(a.time_tick);
      *h.mutable_config() = config_;
    }
    for (auto it = handovers_.begin(); it != handovers_.end();) {
      it = HasEdge(*a.config, cluster_id_, it->first) ? handovers_.erase(it) : std::next(it);
    }
    SetConfig(*a.config);
  } else if (a.advances) {
    checkpoints_[a.source->cluster_id()] = *a.source;
  }
}

void ReplicateState::Replay(const MutableMessage& m) {
  ReplicateAppend a;
  if (!Prepare(m, &a).ok()) return;
  a.time_tick = m.timetick().value_or(TimeTick()).value();
  Apply(a);
}

void ReplicateState::SetConfig(const kingfisher::v1::ReplicateConfiguration& config) {
  config_ = config;
  role_ = RoleOf(config_, cluster_id_);
}

void ReplicateState::SaveTo(kingfisher::v1::WalState* out) const {
  kingfisher::v1::WalReplicateState* r = out->mutable_replicate();
  *r->mutable_config() = config_;
  r->clear_handovers();
  for (const auto& [target, h] : handovers_) *r->add_handovers() = h;
  r->clear_checkpoints();
  for (const auto& [source, c] : checkpoints_) *r->add_checkpoints() = c;
}

void ReplicateState::LoadFrom(const kingfisher::v1::WalState& in) {
  SetConfig(in.replicate().config());
  handovers_.clear();
  for (const kingfisher::v1::ReplicateHandover& h : in.replicate().handovers()) {
    handovers_[h.target_cluster_id()] = h;
  }
  checkpoints_.clear();
  for (const kingfisher::v1::ReplicateCheckpoint& c : in.replicate().checkpoints()) {
    checkpoints_[c.cluster_id()] = c;
  }
}

std::optional<kingfisher::v1::ReplicateCheckpoint> ReplicateState::checkpoint(
    std::string_view source) const {
  auto it = checkpoints_.find(source);
  if (it == checkpoints_.end()) return std::nullopt;
  return it->second;
}

}  // namespace kf::wal
