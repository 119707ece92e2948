#include "streaming/ddl/catalog.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "kingfisher/v1/checkpoint.pb.h"
#include "message/payload.h"
#include "message/validate.h"
#include "message/vchannel_name.h"
#include "spdlog/spdlog.h"

namespace kf::streaming::ddl {
namespace {

using kingfisher::v1::CollectionInfo;
using kingfisher::v1::PartitionInfo;

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

absl::Status CollectionNotFound(const std::string& database, const std::string& name) {
  return StreamingError(StreamingCode::kCollectionNotFound,
                        absl::StrCat("collection ", database, ".", name, " does not exist"));
}

PartitionInfo* FindPartition(CollectionInfo& info, const std::string& name) {
  for (PartitionInfo& p : *info.mutable_partitions()) {
    if (p.name() == name) return &p;
  }
  return nullptr;
}

// Collection ids reserved per store transaction (id_block.h): one, so that a cluster promoted
// from secondary continues above the primary's ids, which its nodes raise the counter past as
// they record replicated CreateCollections (replicate/ddl_pieces.h).
constexpr uint64_t kCollectionIdBlock = 1;

}  // namespace

Catalog::Catalog(Broadcaster* broadcaster, const ClusterKeys& keys, Options options)
    : broadcaster_(broadcaster),
      keys_(keys),
      options_(std::move(options)),
      collection_ids_(&broadcaster->store(), keys_.next_collection_id(), kCollectionIdBlock) {
  RegisterCallbacks();
}

absl::Time Catalog::StoreDeadline(absl::Time deadline) const {
  return std::min(deadline, absl::Now() + options_.call_timeout);
}

absl::StatusOr<Catalog::Loaded> Catalog::LoadById(int64_t id, absl::Time deadline) const {
  const std::string key = keys_.collection(id);
  ASSIGN_OR_RETURN(meta::GetResult got, broadcaster_->store().store()->Get(key, deadline));
  ASSIGN_OR_RETURN(CollectionInfo info, ParseCollectionInfo(keys_, key, got.kv.value));
  return Loaded{std::move(info), got.kv.mod_revision};
}

absl::StatusOr<Catalog::Loaded> Catalog::LoadByName(const std::string& database,
                                                    const std::string& name,
                                                    absl::Time deadline) const {
  const std::string key = keys_.collection_name(database, name);
  absl::StatusOr<meta::GetResult> got = broadcaster_->store().store()->Get(key, deadline);
  if (absl::IsNotFound(got.status())) return CollectionNotFound(database, name);
  if (!got.ok()) return got.status();
  int64_t id = 0;
  if (!absl::SimpleAtoi(got->kv.value, &id)) {
    return absl::DataLossError(absl::StrCat("metadata key ", key, ": not a collection id"));
  }
  absl::StatusOr<Loaded> loaded = LoadById(id, deadline);
  if (absl::IsNotFound(loaded.status())) {
    return absl::DataLossError(absl::StrCat("metadata key ", key, ": collection ", id, " is gone"));
  }
  return loaded;
}

absl::StatusOr<std::map<std::string, int64_t>> Catalog::Load(absl::Time deadline) const {
  ASSIGN_OR_RETURN(meta::RangeResult range,
                   broadcaster_->store().store()->Range(keys_.collections_prefix(), deadline));
  std::map<std::string, int64_t> load;
  for (const meta::KeyValue& kv : range.kvs) {
    ASSIGN_OR_RETURN(CollectionInfo info, ParseCollectionInfo(keys_, kv.key, kv.value));
    if (info.state() == kingfisher::v1::COLLECTION_DROPPED) continue;
    for (const std::string& v : info.schema().vchannels()) {
      absl::StatusOr<std::string> p = PChannelOfVChannel(v);
      if (p.ok()) ++load[*p];
    }
  }
  return load;
}

absl::StatusOr<CollectionInfo> Catalog::CreateCollection(const CollectionSpec& spec,
                                                         const Call& call) {
  RETURN_IF_ERROR(CheckName("database", spec.database));
  RETURN_IF_ERROR(CheckName("collection", spec.name));
  kingfisher::v1::CollectionSchema schema;
  schema.set_name(spec.name);
  schema.set_database(spec.database);
  schema.set_dim(spec.dim);
  schema.set_metric(spec.metric);
  schema.set_shards(spec.shards);
  RETURN_IF_ERROR(DecodeCollectionSchema(schema.SerializeAsString()).status());
  if (options_.pchannels.empty()) {
    return absl::FailedPreconditionError("the cluster has no pchannels to place shards on");
  }

  ASSIGN_OR_RETURN(ResourceKeyLocks::Guard locks,
                   broadcaster_->Lock({ResourceKey::Collection(spec.database, spec.name)},
                                      call.blocking, call.deadline));
  RETURN_IF_ERROR(RefuseOnSecondary(StoreDeadline(call.deadline)));
  const std::string name_key = keys_.collection_name(spec.database, spec.name);
  absl::StatusOr<meta::GetResult> taken =
      broadcaster_->store().store()->Get(name_key, StoreDeadline(call.deadline));
  if (taken.ok()) {
    return StreamingError(StreamingCode::kCollectionExists,
                          absl::StrCat("collection ", spec.database, ".", spec.name,
                                       " already exists (id ", taken->kv.value, ")"));
  }
  if (!absl::IsNotFound(taken.status())) return taken.status();
  using Loads = std::map<std::string, int64_t>;
  ASSIGN_OR_RETURN(Loads load, Load(StoreDeadline(call.deadline)));
  ASSIGN_OR_RETURN(uint64_t id, collection_ids_.Next(StoreDeadline(call.deadline)));
  schema.set_collection_id(static_cast<int64_t>(id));
  for (std::string& v :
       PlaceShards(options_.pchannels, std::move(load), schema.collection_id(), spec.shards)) {
    schema.add_vchannels(std::move(v));
  }

  CollectionInfo info;
  info.set_database(spec.database);
  *info.mutable_schema() = schema;
  info.set_state(kingfisher::v1::COLLECTION_CREATING);
  PartitionInfo* p = info.add_partitions();
  p->set_name(std::string(kDefaultPartition));
  p->set_state(kingfisher::v1::PARTITION_CREATED);
  info.set_create_time_ms(NowMs());

  const std::string key = keys_.collection(schema.collection_id());
  Broadcaster::Request request;
  request.ctx = call.ctx;
  request.message = MutableMessage(MessageType::kCreateCollection, schema.SerializeAsString());
  request.vchannels.assign(schema.vchannels().begin(), schema.vchannels().end());
  request.with_task.compares = {meta::Compare::Absent(name_key), meta::Compare::Absent(key)};
  request.with_task.ops = {meta::Op::Put(key, info.SerializeAsString()),
                           meta::Op::Put(name_key, absl::StrCat(schema.collection_id()))};
  ASSIGN_OR_RETURN(Broadcaster::Result done,
                   broadcaster_->Broadcast(std::move(locks), std::move(request), call.deadline));
  spdlog::info("catalog: created collection {}.{} id={} dim={} shards={} vchannels={} broadcast={}",
               spec.database, spec.name, schema.collection_id(), spec.dim, spec.shards,
               absl::StrJoin(schema.vchannels(), ","), done.broadcast_id);
  ASSIGN_OR_RETURN(Loaded created, LoadById(schema.collection_id(), StoreDeadline(call.deadline)));
  return std::move(created.info);
}

absl::Status Catalog::DropCollection(const std::string& database, const std::string& name,
                                     const Call& call) {
  ASSIGN_OR_RETURN(Locked locked, LockCollection(database, name, call));
  auto& [locks, current] = locked;
  if (current.info.state() != kingfisher::v1::COLLECTION_CREATED) {
    // Under the lock only a finished DDL is visible; anything else is a broken store.
    return absl::FailedPreconditionError(
        absl::StrCat("collection ", database, ".", name, " is in state ",
                     kingfisher::v1::CollectionState_Name(current.info.state())));
  }
  CollectionInfo updated = current.info;
  updated.set_state(kingfisher::v1::COLLECTION_DROPPING);
  kingfisher::v1::DropCollection drop;
  drop.set_collection_id(current.info.schema().collection_id());
  ASSIGN_OR_RETURN(
      uint64_t broadcast_id,
      BroadcastChange(std::move(locks), current, std::move(updated),
                      MutableMessage(MessageType::kDropCollection, drop.SerializeAsString()),
                      call));
  spdlog::info("catalog: dropped collection {}.{} id={} vchannels={} broadcast={}", database, name,
               drop.collection_id(), absl::StrJoin(current.info.schema().vchannels(), ","),
               broadcast_id);
  return absl::OkStatus();
}

absl::Status Catalog::CreatePartition(const std::string& database, const std::string& collection,
                                      const std::string& partition, const Call& call) {
  return PartitionDdl(database, collection, partition, /*create=*/true, call);
}

absl::Status Catalog::DropPartition(const std::string& database, const std::string& collection,
                                    const std::string& partition, const Call& call) {
  return PartitionDdl(database, collection, partition, /*create=*/false, call);
}

absl::Status Catalog::PartitionDdl(const std::string& database, const std::string& collection,
                                   const std::string& partition, bool create, const Call& call) {
  RETURN_IF_ERROR(CheckName("partition", partition));
  if (!create && partition == kDefaultPartition) {
    return StreamingError(StreamingCode::kInvalidArgument,
                          "the _default partition cannot be dropped");
  }
  ASSIGN_OR_RETURN(Locked locked, LockCreated(database, collection, call));
  auto& [locks, current] = locked;
  CollectionInfo updated = current.info;
  PartitionInfo* existing = FindPartition(updated, partition);
  const std::string what = absl::StrCat("partition ", partition, " of ", database, ".", collection);
  if (create) {
    if (existing != nullptr) return absl::AlreadyExistsError(what + " already exists");
    PartitionInfo* p = updated.add_partitions();
    p->set_name(partition);
    p->set_state(kingfisher::v1::PARTITION_CREATING);
  } else {
    if (existing == nullptr) return absl::NotFoundError(what + " does not exist");
    existing->set_state(kingfisher::v1::PARTITION_DROPPING);
  }
  kingfisher::v1::PartitionPayload payload;
  payload.set_collection_id(current.info.schema().collection_id());
  payload.set_partition(partition);
  const MessageType type = create ? MessageType::kCreatePartition : MessageType::kDropPartition;
  ASSIGN_OR_RETURN(uint64_t broadcast_id,
                   BroadcastChange(std::move(locks), current, std::move(updated),
                                   MutableMessage(type, payload.SerializeAsString()), call));
  spdlog::info("catalog: {} partition {} of collection {}.{} id={} broadcast={}",
               create ? "created" : "dropped", partition, database, collection,
               payload.collection_id(), broadcast_id);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<kingfisher::v1::FlushedVChannel>> Catalog::Flush(
    const std::string& database, const std::string& name, const Call& call) {
  ASSIGN_OR_RETURN(Locked locked, LockCreated(database, name, call));
  auto& [locks, current] = locked;
  Broadcaster::Request request;
  request.ctx = call.ctx;
  request.message = MutableMessage(MessageType::kManualFlush, "");
  request.vchannels.assign(current.info.schema().vchannels().begin(),
                           current.info.schema().vchannels().end());
  ASSIGN_OR_RETURN(Broadcaster::Result done,
                   broadcaster_->Broadcast(std::move(locks), std::move(request), call.deadline));
  // The lock is released: other DDL proceeds while the nodes flush.
  std::vector<kingfisher::v1::FlushedVChannel> out;
  for (const kingfisher::v1::BroadcastAck& ack : done.acks) {
    ASSIGN_OR_RETURN(std::string pchannel, PChannelOfVChannel(ack.vchannel()));
    ASSIGN_OR_RETURN(uint64_t checkpoint, AwaitCheckpoint(pchannel, ack.timetick(), call.deadline));
    kingfisher::v1::FlushedVChannel& f = out.emplace_back();
    f.set_vchannel(ack.vchannel());
    f.set_flush_timetick(ack.timetick());
    f.set_checkpoint_timetick(checkpoint);
  }
  spdlog::info("catalog: flushed collection {}.{} id={} broadcast={}", database, name,
               current.info.schema().collection_id(), done.broadcast_id);
  return out;
}

absl::StatusOr<Catalog::Locked> Catalog::LockCollection(const std::string& database,
                                                        const std::string& name,
                                                        const Call& call) const {
  RETURN_IF_ERROR(CheckName("database", database));
  RETURN_IF_ERROR(CheckName("collection", name));
  ASSIGN_OR_RETURN(
      ResourceKeyLocks::Guard locks,
      broadcaster_->Lock({ResourceKey::Collection(database, name)}, call.blocking, call.deadline));
  RETURN_IF_ERROR(RefuseOnSecondary(StoreDeadline(call.deadline)));
  ASSIGN_OR_RETURN(Loaded current, LoadByName(database, name, StoreDeadline(call.deadline)));
  return Locked{std::move(locks), std::move(current)};
}

absl::StatusOr<Catalog::Locked> Catalog::LockCreated(const std::string& database,
                                                     const std::string& name,
                                                     const Call& call) const {
  ASSIGN_OR_RETURN(Locked locked, LockCollection(database, name, call));
  if (locked.current.info.state() != kingfisher::v1::COLLECTION_CREATED) {
    return CollectionNotFound(database, name);
  }
  return locked;
}

absl::StatusOr<uint64_t> Catalog::AwaitCheckpoint(const std::string& pchannel, uint64_t ts,
                                                  absl::Time deadline) const {
  const std::string key = keys_.checkpoints_prefix() + pchannel;
  constexpr absl::Duration kPoll = absl::Milliseconds(50);
  uint64_t seen = 0;
  for (;;) {
    absl::StatusOr<meta::GetResult> got =
        broadcaster_->store().store()->Get(key, StoreDeadline(deadline));
    if (got.ok()) {
      kingfisher::v1::PChannelCheckpoint checkpoint;
      if (!checkpoint.ParseFromString(got->kv.value)) {
        return absl::DataLossError(absl::StrCat("metadata key ", key, ": not a checkpoint"));
      }
      seen = checkpoint.checkpoint_ts();
      if (seen >= ts) return seen;
    } else if (!absl::IsNotFound(got.status())) {
      return got.status();
    }
    if (absl::Now() + kPoll > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("flush: the checkpoint of ", pchannel, " is at timetick ", seen,
                       ", below the flush at ", ts,
                       " (still flushing; or its node cannot checkpoint it: no object store, or "
                       "a recovery or checkpoint error that `kfctl status` on that node shows; "
                       "docs/recovery-storage.md)"));
    }
    absl::SleepFor(kPoll);
  }
}

absl::StatusOr<uint64_t> Catalog::BroadcastChange(ResourceKeyLocks::Guard locks,
                                                  const Loaded& current, CollectionInfo updated,
                                                  MutableMessage message, const Call& call) {
  const std::string key = keys_.collection(current.info.schema().collection_id());
  Broadcaster::Request request;
  request.ctx = call.ctx;
  request.message = std::move(message);
  request.vchannels.assign(current.info.schema().vchannels().begin(),
                           current.info.schema().vchannels().end());
  request.with_task.compares = {meta::Compare::ModRevisionIs(key, current.mod_revision)};
  request.with_task.ops = {meta::Op::Put(key, updated.SerializeAsString())};
  ASSIGN_OR_RETURN(Broadcaster::Result done,
                   broadcaster_->Broadcast(std::move(locks), std::move(request), call.deadline));
  return done.broadcast_id;
}

absl::StatusOr<CollectionInfo> Catalog::DescribeCollection(const std::string& database,
                                                           const std::string& name,
                                                           absl::Time deadline) {
  RETURN_IF_ERROR(CheckName("database", database));
  RETURN_IF_ERROR(CheckName("collection", name));
  ASSIGN_OR_RETURN(Loaded loaded, LoadByName(database, name, StoreDeadline(deadline)));
  return std::move(loaded.info);
}

absl::StatusOr<std::vector<CollectionInfo>> Catalog::ListCollections(const std::string& database,
                                                                     absl::Time deadline) {
  RETURN_IF_ERROR(CheckName("database", database));
  ASSIGN_OR_RETURN(
      meta::RangeResult range,
      broadcaster_->store().store()->Range(keys_.collections_prefix(), StoreDeadline(deadline)));
  std::vector<CollectionInfo> out;
  for (const meta::KeyValue& kv : range.kvs) {
    ASSIGN_OR_RETURN(CollectionInfo info, ParseCollectionInfo(keys_, kv.key, kv.value));
    if (info.database() == database && info.state() != kingfisher::v1::COLLECTION_DROPPED) {
      out.push_back(std::move(info));
    }
  }
  return out;
}

absl::StatusOr<AckWrites> Catalog::UpdateCollection(int64_t id, const Mutation& mutate) const {
  ASSIGN_OR_RETURN(Loaded loaded, LoadById(id, absl::Now() + options_.call_timeout));
  AckWrites writes;
  if (!mutate(loaded.info, writes)) {
    spdlog::warn("catalog: collection {} needs no change for this DDL (state {})", id,
                 kingfisher::v1::CollectionState_Name(loaded.info.state()));
    return AckWrites{};
  }
  const std::string key = keys_.collection(id);
  writes.compares.push_back(meta::Compare::ModRevisionIs(key, loaded.mod_revision));
  writes.ops.push_back(meta::Op::Put(key, loaded.info.SerializeAsString()));
  return writes;
}

absl::StatusOr<AckWrites> Catalog::MarkDropped(const AckCallbackContext& c, bool replicated) {
  ASSIGN_OR_RETURN(auto drop, DecodeDropCollection(c.message.payload()));
  absl::StatusOr<Loaded> current =
      LoadById(drop.collection_id(), absl::Now() + options_.call_timeout);
  // A replicated drop of a collection created before replication started: nothing to do.
  if (replicated && absl::IsNotFound(current.status())) return AckWrites{};
  if (!current.ok()) return current.status();
  // The name index entry, if it still names this collection, goes with the transition.
  const std::string name_key =
      keys_.collection_name(current->info.database(), current->info.schema().name());
  absl::StatusOr<meta::GetResult> name =
      broadcaster_->store().store()->Get(name_key, absl::Now() + options_.call_timeout);
  if (!name.ok() && !absl::IsNotFound(name.status())) return name.status();
  const bool ours = name.ok() && name->kv.value == absl::StrCat(drop.collection_id());
  return UpdateCollection(drop.collection_id(), [&](CollectionInfo& info, AckWrites& extra) {
    // A replicated drop finds whatever state the primary's DDL left (its catalog was never
    // marked DROPPING here).
    if (replicated ? info.state() == kingfisher::v1::COLLECTION_DROPPED
                   : info.state() != kingfisher::v1::COLLECTION_DROPPING) {
      return false;
    }
    info.set_state(kingfisher::v1::COLLECTION_DROPPED);
    info.set_drop_broadcast_id(c.task.broadcast_id());
    if (ours) {
      extra.compares.push_back(meta::Compare::ModRevisionIs(name_key, name->kv.mod_revision));
      extra.ops.push_back(meta::Op::Delete(name_key));
    }
    return true;
  });
}

void Catalog::RegisterCallbacks() {
  broadcaster_->RegisterCallback(
      MessageType::kCreateCollection,
      [this](const AckCallbackContext& c) -> absl::StatusOr<AckWrites> {
        ASSIGN_OR_RETURN(auto schema, DecodeCollectionSchema(c.message.payload()));
        return UpdateCollection(schema.collection_id(), [&c](CollectionInfo& info, AckWrites&) {
          if (info.state() != kingfisher::v1::COLLECTION_CREATING) return false;
          info.set_state(kingfisher::v1::COLLECTION_CREATED);
          info.set_create_broadcast_id(c.task.broadcast_id());
          return true;
        });
      });
  broadcaster_->RegisterCallback(MessageType::kDropCollection, [this](const AckCallbackContext& c) {
    return MarkDropped(c, /*replicated=*/false);
  });
  auto partition_callback = [this](bool create) {
    return [this, create](const AckCallbackContext& c) -> absl::StatusOr<AckWrites> {
      ASSIGN_OR_RETURN(auto payload, DecodePartition(c.message.payload()));
      return UpdateCollection(payload.collection_id(), [&](CollectionInfo& info, AckWrites&) {
        auto* parts = info.mutable_partitions();
        for (int i = 0; i < parts->size(); ++i) {
          PartitionInfo* p = parts->Mutable(i);
          if (p->name() != payload.partition()) continue;
          if (create && p->state() == kingfisher::v1::PARTITION_CREATING) {
            p->set_state(kingfisher::v1::PARTITION_CREATED);
            return true;
          }
          if (!create && p->state() == kingfisher::v1::PARTITION_DROPPING) {
            parts->DeleteSubrange(i, 1);
            return true;
          }
        }
        return false;
      });
    };
  };
  broadcaster_->RegisterCallback(MessageType::kCreatePartition, partition_callback(true));
  broadcaster_->RegisterCallback(MessageType::kDropPartition, partition_callback(false));
}

}  // namespace kf::streaming::ddl
