#include "wal/collections/collection_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "message/payload.h"
#include "message/vchannel_name.h"

namespace kf::wal {
namespace {

absl::string_view Name(MessageType t) { return ToAbsl(MessageTypeName(t)); }

template <typename... Parts>
absl::Status Error(StreamingCode code, const Parts&... parts) {
  return StreamingError(code, absl::StrCat(parts...));
}

// The collection id a payload names must be the one its vchannel belongs to.
absl::Status CheckCollectionId(MessageType t, int64_t in_payload, const CollectionVChannel& vc,
                               std::string_view vchannel) {
  if (in_payload == vc.collection_id) return absl::OkStatus();
  return Error(StreamingCode::kInvalidArgument, Name(t), " names collection ", in_payload,
               " but vchannel '", ToAbsl(vchannel), "' belongs to collection ", vc.collection_id);
}

absl::Status CheckSchema(const kingfisher::v1::CollectionSchema& schema,
                         const CollectionVChannel& vc, std::string_view vchannel) {
  RETURN_IF_ERROR(
      CheckCollectionId(MessageType::kCreateCollection, schema.collection_id(), vc, vchannel));
  if (vc.shard >= schema.shards()) {
    return Error(StreamingCode::kInvalidArgument, "vchannel '", ToAbsl(vchannel), "' is shard ",
                 vc.shard, " but collection ", vc.collection_id, " has ", schema.shards(),
                 " shards");
  }
  const auto& listed = schema.vchannels();
  if (!listed.empty() && std::find(listed.begin(), listed.end(), vchannel) == listed.end()) {
    return Error(StreamingCode::kInvalidArgument, "CreateCollection on vchannel '",
                 ToAbsl(vchannel), "', which its schema does not list");
  }
  return absl::OkStatus();
}

absl::Status CollectionMissing(std::string_view vchannel, bool dropped) {
  return Error(StreamingCode::kCollectionNotFound, "the collection of vchannel '", ToAbsl(vchannel),
               dropped ? "' was dropped" : "' does not exist");
}

}  // namespace

std::optional<IdempotencyKey> BroadcastKey(const MutableMessage& m) {
  if (!IsExclusiveType(m.type())) return std::nullopt;
  auto header = m.broadcast_header();
  if (!header) return std::nullopt;
  return IdempotencyKey{.producer = std::string(m.vchannel()), .sequence = header->broadcast_id()};
}

absl::Status CollectionTable::Prepare(const MutableMessage& m, CollectionAppend* out) {
  CollectionAppend& a = *out;
  const std::string_view vchannel = m.vchannel();
  // A collection vchannel ends in its shard number: most raw names stop here, unparsed.
  if (vchannel.empty() || vchannel.back() < '0' || vchannel.back() > '9') return absl::OkStatus();
  ASSIGN_OR_RETURN(std::optional<CollectionVChannel> vc, ParseVChannel(vchannel));
  if (!vc) return absl::OkStatus();
  a.type = m.type();
  if (!IsExclusiveType(a.type)) {
    a.kind = CollectionAppend::Kind::kData;
    if (a.type == MessageType::kInsert) {
      ASSIGN_OR_RETURN(InsertBatchHeader h, PeekInsertBatch(m.payload()));
      // An Insert may leave the id unset: the vchannel says which collection it is for.
      if (h.collection_id != 0) {
        RETURN_IF_ERROR(CheckCollectionId(a.type, h.collection_id, *vc, vchannel));
      }
      a.dim = h.dim;
      if (h.partition != kDefaultPartition) a.partition = std::move(h.partition);
    }
    return absl::OkStatus();
  }
  a.kind = CollectionAppend::Kind::kDdl;
  a.vchannel = std::string(vchannel);
  switch (a.type) {
    case MessageType::kCreateCollection: {
      ASSIGN_OR_RETURN(kingfisher::v1::CollectionSchema schema,
                       DecodeCollectionSchema(m.payload()));
      RETURN_IF_ERROR(CheckSchema(schema, *vc, vchannel));
      a.dim = schema.dim();
      break;
    }
    case MessageType::kDropCollection: {
      ASSIGN_OR_RETURN(kingfisher::v1::DropCollection drop, DecodeDropCollection(m.payload()));
      RETURN_IF_ERROR(CheckCollectionId(a.type, drop.collection_id(), *vc, vchannel));
      break;
    }
    case MessageType::kCreatePartition:
    case MessageType::kDropPartition: {
      ASSIGN_OR_RETURN(kingfisher::v1::PartitionPayload p, DecodePartition(m.payload()));
      RETURN_IF_ERROR(CheckCollectionId(a.type, p.collection_id(), *vc, vchannel));
      if (p.partition() == kDefaultPartition) {
        return Error(StreamingCode::kInvalidArgument, Name(a.type), ": the default partition '",
                     ToAbsl(kDefaultPartition), "' exists from the collection's creation on");
      }
      a.partition = std::move(*p.mutable_partition());
      break;
    }
    default:
      break;  // ManualFlush: only needs a created collection
  }
  return absl::OkStatus();
}

absl::Status CollectionTable::Admit(std::string_view vchannel, const CollectionAppend& a) const {
  if (a.kind == CollectionAppend::Kind::kUnchecked) return absl::OkStatus();
  auto it = shards_.find(ToAbsl(vchannel));
  const Shard* shard = it == shards_.end() ? nullptr : &it->second;
  if (a.kind == CollectionAppend::Kind::kDdl) return AdmitDdl(a, shard);
  if (shard == nullptr || shard->dropped) return CollectionMissing(vchannel, shard != nullptr);
  if (a.type != MessageType::kInsert) return absl::OkStatus();
  if (a.dim != shard->dim) {
    return Error(StreamingCode::kInvalidArgument, "Insert of dim ", a.dim, " into vchannel '",
                 ToAbsl(vchannel), "', whose collection has dim ", shard->dim);
  }
  if (!a.partition.empty() && !shard->partitions.contains(a.partition)) {
    return Error(StreamingCode::kCollectionNotFound, "partition '", a.partition,
                 "' of the collection of vchannel '", ToAbsl(vchannel), "' does not exist");
  }
  return absl::OkStatus();
}

absl::Status CollectionTable::AdmitDdl(const CollectionAppend& a, const Shard* shard) const {
  switch (a.type) {
    case MessageType::kCreateCollection:
      if (shard == nullptr) return absl::OkStatus();
      return Error(StreamingCode::kCollectionExists, "vchannel '", a.vchannel, "' already ",
                   shard->dropped ? "belonged to a dropped collection (ids are never reused)"
                                  : "has its collection");
    case MessageType::kDropCollection:
      // Unknown: appended anyway, so that the drop converges and nothing follows it.
      if (shard == nullptr || !shard->dropped) return absl::OkStatus();
      return CollectionMissing(a.vchannel, /*dropped=*/true);
    default:
      break;
  }
  if (shard == nullptr || shard->dropped) return CollectionMissing(a.vchannel, shard != nullptr);
  const bool exists = shard->partitions.contains(a.partition);
  if (a.type == MessageType::kCreatePartition && exists) {
    return Error(StreamingCode::kCollectionExists, "partition '", a.partition,
                 "' of the collection of vchannel '", a.vchannel, "' already exists");
  }
  if (a.type == MessageType::kDropPartition && !exists) {
    return Error(StreamingCode::kCollectionNotFound, "partition '", a.partition,
                 "' of the collection of vchannel '", a.vchannel, "' does not exist");
  }
  return absl::OkStatus();
}

void CollectionTable::Apply(const CollectionAppend& a) {
  if (a.kind != CollectionAppend::Kind::kDdl) return;
  switch (a.type) {
    case MessageType::kCreateCollection: {
      // A second create (only ever replayed from an old log) changes nothing.
      auto [it, inserted] = shards_.try_emplace(a.vchannel);
      if (inserted) it->second.dim = a.dim;
      return;
    }
    case MessageType::kDropCollection: {
      Shard& shard = shards_[a.vchannel];
      shard.dropped = true;
      shard.partitions = {};
      return;
    }
    case MessageType::kCreatePartition:
    case MessageType::kDropPartition: {
      auto it = shards_.find(a.vchannel);
      if (it == shards_.end() || it->second.dropped) return;
      if (a.type == MessageType::kCreatePartition) {
        it->second.partitions.insert(a.partition);
      } else {
        it->second.partitions.erase(a.partition);
      }
      return;
    }
    default:
      return;
  }
}

void CollectionTable::Replay(const MutableMessage& m) {
  if (auto a = Prepare(m); a.ok()) Apply(*a);
}

void CollectionTable::SaveTo(kingfisher::v1::WalState* out) const {
  for (const auto& [vchannel, shard] : shards_) {
    kingfisher::v1::WalCollection* c = out->add_collections();
    c->set_vchannel(vchannel);
    c->set_dropped(shard.dropped);
    c->set_dim(shard.dim);
    for (const std::string& p : shard.partitions) c->add_partitions(p);
  }
}

void CollectionTable::LoadFrom(const kingfisher::v1::WalState& in) {
  shards_.clear();
  for (const kingfisher::v1::WalCollection& c : in.collections()) {
    Shard& shard = shards_[c.vchannel()];
    shard.dropped = c.dropped();
    shard.dim = c.dim();
    shard.partitions.insert(c.partitions().begin(), c.partitions().end());
  }
}

CollectionTable::State CollectionTable::state(std::string_view vchannel) const {
  auto it = shards_.find(ToAbsl(vchannel));
  if (it == shards_.end()) return State::kUnknown;
  return it->second.dropped ? State::kDropped : State::kCreated;
}

}  // namespace kf::wal
