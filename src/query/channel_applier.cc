#include "query/channel_applier.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "message/payload.h"
#include "message/properties.h"
#include "wal/txn/txn_message.h"

namespace kf::query {
namespace {

absl::Status Corrupt(const ImmutableMessage& m, const absl::Status& cause) {
  return StreamingError(
      StreamingCode::kDataLoss,
      absl::StrCat(ToAbsl(MessageTypeName(m.type())), " ", m.id().ToText(), " on ",
                   ToAbsl(m.vchannel()),
                   " cannot be applied although the WAL admitted it: ", cause.message()));
}

}  // namespace

ChannelApplier::ChannelApplier(std::string pchannel, ShardOptions options, RequestSeal request_seal)
    : pchannel_(std::move(pchannel)), options_(options), request_seal_(std::move(request_seal)) {}

absl::Status ChannelApplier::Apply(const ImmutableMessage& m) {
  SegmentStart at{.ts = m.timetick().value(), .from = m.last_confirmed()};
  if (m.type() == MessageType::kTxn) {
    const wal::TxnMessage* txn = wal::AsTxnMessage(m);
    // Reading from the Begin delivers the whole transaction, whatever its commit's LCMID says.
    if (!txn->inner().empty() && txn->inner().front()->id() < at.from) {
      at.from = txn->inner().front()->id();
    }
    for (const ImmutableMessagePtr& body : txn->inner()) {
      if (absl::Status s = ApplyOne(*body, at); !s.ok()) return s;
    }
  } else if (absl::Status s = ApplyOne(m, at); !s.ok()) {
    return s;
  }
  // A Txn carries its commit's properties, `_rh` included.
  if ((IsExclusiveType(m.type()) || m.message().HasProperty(prop::kReplicate)) &&
      !Replaying(at.ts)) {
    ReplayWalState(m);
  }
  if (at.from.valid()) applied_from_ = at.from;
  applied_id_ = m.id();
  AdvanceTSafe(at.ts);
  return absl::OkStatus();
}

void ChannelApplier::Restore(std::vector<std::shared_ptr<Shard>> shards, uint64_t checkpoint_ts,
                             const kingfisher::v1::WalState& wal) {
  {
    absl::MutexLock lock(&mu_);
    shards_.clear();
    for (auto& shard : shards) shards_[shard->vchannel()] = std::move(shard);
  }
  replayed_below_ = checkpoint_ts;
  wal_collections_.LoadFrom(wal);
  wal_replicate_.LoadFrom(wal);
  wal_broadcasts_.clear();
  for (const kingfisher::v1::WalBroadcast& b : wal.broadcasts()) {
    wal_broadcasts_[b.vchannel()].push_back(b);
  }
}

void ChannelApplier::ReplayWalState(const ImmutableMessage& m) {
  wal_replicate_.Replay(m.message());
  wal_collections_.Replay(m.message());
  const std::optional<wal::IdempotencyKey> key = wal::BroadcastKey(m.message());
  if (!key.has_value()) return;
  std::deque<kingfisher::v1::WalBroadcast>& window = wal_broadcasts_[key->producer];
  kingfisher::v1::WalBroadcast& b = window.emplace_back();
  b.set_vchannel(key->producer);
  b.set_broadcast_id(key->sequence);
  b.set_id(m.id().Encode());
  b.set_timetick(m.timetick().value());
  b.set_last_confirmed(m.last_confirmed().Encode());
  if (window.size() > wal::kBroadcastWindow) window.pop_front();
}

std::vector<std::pair<std::shared_ptr<Shard>, std::string>> ChannelApplier::ClaimAgedSeals(
    uint64_t now_ms) {
  std::vector<std::pair<std::shared_ptr<Shard>, std::string>> out;
  for (auto& shard : MutableShards()) {
    for (std::string& partition : shard->ClaimAgedSeals(now_ms)) {
      out.emplace_back(shard, std::move(partition));
    }
  }
  return out;
}

std::optional<std::pair<std::shared_ptr<Shard>, std::string>> ChannelApplier::ClaimLargestSeal(
    size_t min_rows) {
  std::optional<std::pair<std::shared_ptr<Shard>, std::string>> best;
  size_t best_bytes = 0;
  for (auto& shard : MutableShards()) {
    auto largest = shard->LargestGrowing(min_rows);
    if (largest.has_value() && (!best.has_value() || largest->second > best_bytes)) {
      best.emplace(shard, std::move(largest->first));
      best_bytes = largest->second;
    }
  }
  if (best.has_value() && !best->first->ClaimSealOf(best->second)) return std::nullopt;
  return best;
}

CheckpointPlan ChannelApplier::PlanCheckpoint() const {
  CheckpointPlan plan;
  plan.checkpoint_ts = tsafe();
  plan.replay_from = applied_from_;
  if (applied_id_.valid()) {
    kingfisher::v1::WalState& wal = plan.wal.emplace();
    wal.set_after_id(applied_id_.Encode());
    wal.set_after_timetick(plan.checkpoint_ts);
    wal_collections_.SaveTo(&wal);
    wal_replicate_.SaveTo(&wal);
    for (const auto& [vchannel, window] : wal_broadcasts_) {
      for (const kingfisher::v1::WalBroadcast& b : window) *wal.add_broadcasts() = b;
    }
  }
  for (auto& shard : MutableShards()) {
    ShardCheckpointPlan s = shard->PlanCheckpoint();
    if (s.replay_from.has_value() && *s.replay_from < plan.replay_from) {
      plan.replay_from = *s.replay_from;
    }
    plan.shards.emplace_back(std::move(shard), std::move(s));
  }
  return plan;
}

absl::Status ChannelApplier::ApplyOne(const ImmutableMessage& m, const SegmentStart& at) {
  const std::string_view payload = m.message().payload();
  const bool replaying = Replaying(at.ts);
  switch (m.type()) {
    case MessageType::kCreateCollection: {
      if (replaying) return absl::OkStatus();  // the checkpoint has the shard, or it was dropped
      auto schema = DecodeCollectionSchema(payload);
      if (!schema.ok()) return Corrupt(m, schema.status());
      auto shard = std::make_shared<Shard>(std::string(m.vchannel()),
                                           ShardSchema{.collection_id = schema->collection_id(),
                                                       .dim = schema->dim(),
                                                       .metric = MetricFromProto(schema->metric())},
                                           options_, at);
      absl::MutexLock lock(&mu_);
      shards_.try_emplace(std::string(m.vchannel()), std::move(shard));
      return absl::OkStatus();
    }
    case MessageType::kDropCollection: {
      if (replaying) return absl::OkStatus();
      absl::MutexLock lock(&mu_);
      shards_.erase(ToAbsl(m.vchannel()));
      return absl::OkStatus();
    }
    case MessageType::kCreatePartition:
    case MessageType::kDropPartition:
    case MessageType::kCreateSegment: {
      if (replaying) return absl::OkStatus();  // the checkpoint's partitions are as they left them
      std::shared_ptr<Shard> shard = MutableShard(m.vchannel());
      if (shard == nullptr) return absl::OkStatus();
      auto partition = DecodePartition(payload);
      if (!partition.ok()) return Corrupt(m, partition.status());
      if (m.type() == MessageType::kCreatePartition) {
        shard->CreatePartition(partition->partition(), at);
      } else if (m.type() == MessageType::kDropPartition) {
        shard->DropPartition(partition->partition());
      } else {
        shard->OpenSegment(partition->partition(), at);
        ++segments_opened_;
      }
      return absl::OkStatus();
    }
    case MessageType::kManualFlush: {
      if (replaying) return absl::OkStatus();  // the checkpoint holds what it sealed
      std::shared_ptr<Shard> shard = MutableShard(m.vchannel());
      if (shard == nullptr) return absl::OkStatus();
      shard->SealAll(at);
      ++segments_opened_;  // checkpointed at once, so `kfctl flush` returns promptly
      return absl::OkStatus();
    }
    case MessageType::kInsert: {
      std::shared_ptr<Shard> shard = MutableShard(m.vchannel());
      if (shard == nullptr) return absl::OkStatus();
      auto batch = DecodeInsertBatch(payload);
      if (!batch.ok()) return Corrupt(m, batch.status());
      if (batch->dim() != shard->schema().dim) {
        return Corrupt(m,
                       absl::InvalidArgumentError(absl::StrCat(
                           "dim ", batch->dim(), ", the collection's is ", shard->schema().dim)));
      }
      shard->Insert(*batch, at, replaying);
      if (request_seal_ != nullptr && shard->ClaimSeal(batch->partition())) {
        request_seal_(shard, std::string(PartitionName(batch->partition())));
      }
      return absl::OkStatus();
    }
    case MessageType::kDelete: {
      std::shared_ptr<Shard> shard = MutableShard(m.vchannel());
      if (shard == nullptr) return absl::OkStatus();
      auto pks = DecodeDeletePks(payload);
      if (!pks.ok()) return Corrupt(m, pks.status());
      shard->Delete(*pks, at.ts, replaying);
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();  // TimeTicks, txn control: only the tSafe moves
  }
}

std::shared_ptr<Shard> ChannelApplier::MutableShard(std::string_view vchannel) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = shards_.find(ToAbsl(vchannel));
  return it == shards_.end() ? nullptr : it->second;
}

std::shared_ptr<const Shard> ChannelApplier::shard(std::string_view vchannel) const {
  return MutableShard(vchannel);
}

void ChannelApplier::AdvanceTSafe(uint64_t ts) {
  absl::MutexLock lock(&mu_);
  if (ts > tsafe_) tsafe_ = ts;
}

uint64_t ChannelApplier::tsafe() const {
  absl::ReaderMutexLock lock(&mu_);
  return tsafe_;
}

bool ChannelApplier::AwaitTSafe(uint64_t ts, absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto reached = [this, ts]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return tsafe_ >= ts; };
  return mu_.AwaitWithDeadline(absl::Condition(&reached), deadline);
}

std::vector<std::shared_ptr<const Shard>> ChannelApplier::shards() const {
  std::vector<std::shared_ptr<Shard>> all = MutableShards();
  return {all.begin(), all.end()};
}

std::vector<std::shared_ptr<Shard>> ChannelApplier::MutableShards() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::shared_ptr<Shard>> out;
  for (const auto& [vchannel, shard] : shards_) out.push_back(shard);
  return out;
}

size_t ChannelApplier::memory_bytes() const {
  absl::ReaderMutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [vchannel, shard] : shards_) n += shard->memory_bytes() + shard->index_bytes();
  return n;
}

size_t ChannelApplier::rows() const {
  absl::ReaderMutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [vchannel, shard] : shards_) n += shard->rows();
  return n;
}

}  // namespace kf::query
