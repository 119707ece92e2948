// The value helpers of include/kingfisher/collections.h: shard routing and the Insert/Delete
// messages of a collection's rows.
#include "kingfisher/collections.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "kingfisher/v1/message.pb.h"

namespace kingfisher {
namespace {

absl::Status Invalid(std::string_view message) {
  return kf::StreamingError(kf::StreamingCode::kInvalidArgument, message);
}

// MurmurHash3's 64-bit finalizer (fmix64): a bijection on 64 bits whose every output bit
// depends on every input bit, so consecutive pks (allocated ids are increasing) spread evenly
// over the shards. Part of the wire contract: see ShardOfPk.
uint64_t Fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

// The shard count of `collection` (its vchannels), checked against its `shards` field.
absl::StatusOr<uint32_t> ShardsOf(const CollectionInfo& collection) {
  const size_t n = collection.vchannels.size();
  if (n == 0) {
    return Invalid(absl::StrCat("collection '", collection.name, "' has no vchannels"));
  }
  if (collection.shards != 0 && collection.shards != n) {
    return Invalid(absl::StrCat("collection '", collection.name, "' has ", n,
                                " vchannels but shards = ", collection.shards));
  }
  return static_cast<uint32_t>(n);
}

// Row indexes grouped by shard, each group in input order.
std::vector<std::vector<size_t>> GroupByShard(const std::vector<int64_t>& pks, uint32_t shards) {
  std::vector<std::vector<size_t>> rows(shards);
  for (size_t i = 0; i < pks.size(); ++i) rows[ShardOfPk(pks[i], shards)].push_back(i);
  return rows;
}

}  // namespace

uint32_t ShardOfPk(int64_t pk, uint32_t shards) {
  return static_cast<uint32_t>(Fmix64(static_cast<uint64_t>(pk)) % shards);
}

absl::StatusOr<std::vector<Message>> InsertMessages(const CollectionInfo& collection,
                                                    const std::vector<int64_t>& pks,
                                                    const std::vector<float>& vectors,
                                                    const std::string& partition) {
  auto shards = ShardsOf(collection);
  if (!shards.ok()) return shards.status();
  const uint32_t dim = collection.dim;
  if (dim == 0) return Invalid(absl::StrCat("collection '", collection.name, "' has dim 0"));
  if (pks.empty()) return Invalid("no rows to insert");
  if (vectors.size() % dim != 0 || vectors.size() / dim != pks.size()) {
    return Invalid(absl::StrCat(vectors.size(), " vector values for ", pks.size(), " rows of dim ",
                                dim, " (want ", pks.size(), " x ", dim, ")"));
  }
  std::vector<Message> out;
  const std::vector<std::vector<size_t>> groups = GroupByShard(pks, *shards);
  for (uint32_t shard = 0; shard < *shards; ++shard) {
    const std::vector<size_t>& rows = groups[shard];
    if (rows.empty()) continue;
    v1::InsertBatch batch;
    batch.set_collection_id(collection.id);
    batch.set_partition(partition);
    batch.set_dim(dim);
    batch.mutable_pks()->Reserve(static_cast<int>(rows.size()));
    batch.mutable_vectors()->Reserve(static_cast<int>(rows.size() * dim));
    for (size_t row : rows) {
      batch.add_pks(pks[row]);
      const float* v = vectors.data() + row * dim;
      batch.mutable_vectors()->Add(v, v + dim);
    }
    out.push_back(Message{.type = MessageType::kInsert,
                          .vchannel = collection.vchannels[shard],
                          .payload = batch.SerializeAsString()});
  }
  return out;
}

absl::StatusOr<std::vector<Message>> DeleteMessages(const CollectionInfo& collection,
                                                    const std::vector<int64_t>& pks) {
  auto shards = ShardsOf(collection);
  if (!shards.ok()) return shards.status();
  if (pks.empty()) return Invalid("no pks to delete");
  std::vector<Message> out;
  const std::vector<std::vector<size_t>> groups = GroupByShard(pks, *shards);
  for (uint32_t shard = 0; shard < *shards; ++shard) {
    if (groups[shard].empty()) continue;
    v1::DeletePks batch;
    for (size_t row : groups[shard]) batch.add_pks(pks[row]);
    out.push_back(Message{.type = MessageType::kDelete,
                          .vchannel = collection.vchannels[shard],
                          .payload = batch.SerializeAsString()});
  }
  return out;
}

}  // namespace kingfisher
