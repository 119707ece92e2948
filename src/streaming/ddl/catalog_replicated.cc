// The catalog on a secondary cluster (docs/replication.md "DDL on the secondary"): it refuses
// DDL of its own and takes the primary's through ReplicatedCallback.
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "kingfisher/v1/replicate.pb.h"
#include "message/payload.h"
#include "message/replicate_config.h"
#include "spdlog/spdlog.h"
#include "streaming/ddl/catalog.h"

namespace kf::streaming::ddl {

using kingfisher::v1::CollectionInfo;
using kingfisher::v1::PartitionInfo;

absl::Status Catalog::RefuseOnSecondary(absl::Time deadline) const {
  const std::string key = keys_.replicate_config();
  absl::StatusOr<meta::GetResult> got = broadcaster_->store().store()->Get(key, deadline);
  if (absl::IsNotFound(got.status())) return absl::OkStatus();
  if (!got.ok()) return got.status();
  kingfisher::v1::ReplicateConfiguration config;
  if (!config.ParseFromString(got->kv.value)) {
    return absl::DataLossError(
        absl::StrCat("metadata key ", key, ": not a ReplicateConfiguration"));
  }
  const ReplicateRole role = RoleOf(config, options_.cluster_id);
  if (role.kind != ReplicateRole::Kind::kSecondary) return absl::OkStatus();
  return StreamingError(StreamingCode::kReplicateViolation,
                        absl::StrCat("cluster ", options_.cluster_id, " is a secondary of cluster ",
                                     role.primary_id, " (", role.primary_endpoint,
                                     "): its collections change with the primary's; "
                                     "run DDL there"));
}

absl::StatusOr<AckWrites> Catalog::ReplicatedCreate(const AckCallbackContext& c) {
  ASSIGN_OR_RETURN(kingfisher::v1::CollectionSchema schema,
                   DecodeCollectionSchema(c.message.payload()));
  const std::string database =
      schema.database().empty() ? std::string(kDefaultDatabase) : schema.database();
  const int64_t id = schema.collection_id();
  const std::string key = keys_.collection(id);
  const std::string name_key = keys_.collection_name(database, schema.name());
  meta::MetaStore* store = broadcaster_->store().store();
  const absl::Time deadline = absl::Now() + options_.call_timeout;
  absl::StatusOr<meta::GetResult> known = store->Get(key, deadline);
  if (known.ok()) {  // a collection of this cluster's own (docs/replication.md "Topology")
    spdlog::error(
        "catalog: the primary's collection {}.{} has id {}, which this cluster used for a "
        "collection of its own; it keeps its own (a secondary must start without collections)",
        database, schema.name(), id);
    return AckWrites{};
  }
  if (!absl::IsNotFound(known.status())) return known.status();

  CollectionInfo info;
  info.set_database(database);
  *info.mutable_schema() = schema;
  info.set_state(kingfisher::v1::COLLECTION_CREATED);
  PartitionInfo* p = info.add_partitions();
  p->set_name(std::string(kDefaultPartition));
  p->set_state(kingfisher::v1::PARTITION_CREATED);
  info.set_create_time_ms(absl::ToUnixMillis(absl::Now()));
  info.set_create_broadcast_id(c.task.broadcast_id());
  AckWrites writes;
  writes.compares.push_back(meta::Compare::Absent(key));
  writes.ops.push_back(meta::Op::Put(key, info.SerializeAsString()));
  // The primary's name wins over whatever this cluster held under it before replicating.
  writes.ops.push_back(meta::Op::Put(name_key, absl::StrCat(id)));

  return writes;
}

AckCallback Catalog::ReplicatedCallback() {
  return [this](const AckCallbackContext& c) -> absl::StatusOr<AckWrites> {
    switch (c.message.type()) {
      case MessageType::kCreateCollection:
        return ReplicatedCreate(c);
      case MessageType::kDropCollection:
        return MarkDropped(c, /*replicated=*/true);
      case MessageType::kCreatePartition:
      case MessageType::kDropPartition: {
        const bool create = c.message.type() == MessageType::kCreatePartition;
        ASSIGN_OR_RETURN(auto payload, DecodePartition(c.message.payload()));
        absl::StatusOr<AckWrites> writes =
            UpdateCollection(payload.collection_id(), [&](CollectionInfo& info, AckWrites&) {
              auto* parts = info.mutable_partitions();
              for (int i = 0; i < parts->size(); ++i) {
                if (parts->Get(i).name() != payload.partition()) continue;
                if (create) {
                  if (parts->Get(i).state() == kingfisher::v1::PARTITION_CREATED) return false;
                  parts->Mutable(i)->set_state(kingfisher::v1::PARTITION_CREATED);
                } else {
                  parts->DeleteSubrange(i, 1);
                }
                return true;
              }
              if (!create) return false;
              PartitionInfo* p = info.add_partitions();
              p->set_name(payload.partition());
              p->set_state(kingfisher::v1::PARTITION_CREATED);
              return true;
            });
        // Of a collection created before replication started: nothing to do.
        if (absl::IsNotFound(writes.status())) return AckWrites{};
        return writes;
      }
      default:
        return AckWrites{};  // no catalog change (ManualFlush)
    }
  };
}

}  // namespace kf::streaming::ddl
