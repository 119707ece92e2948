// Strict decoders for the collection payloads of docs/semantics.md §2. Beyond protobuf parsing they
// check the invariants the segment and search code rely on, so a decoded payload is safe to index.
// Pure functions: thread-safe. Errors: StreamingError(kInvalidArgument, what is wrong).
// Unknown protobuf fields are tolerated (forward compatibility), as protobuf does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kingfisher/v1/message.pb.h"

namespace kf {

// Limits shared with the schema checks.
inline constexpr uint32_t kMaxDim = 32768;
inline constexpr uint32_t kMaxShards = 64;

// At least one row; dim > 0 (and <= kMaxDim); vectors.size() == pks.size() * dim; attributes
// empty or exactly one per row.
absl::StatusOr<kingfisher::v1::InsertBatch> DecodeInsertBatch(std::string_view payload);
// The scalar fields of an InsertBatch without copying its rows: what the WAL checks against the
// collection's schema on every Insert, after Produce validated the payload (DecodeInsertBatch).
struct InsertBatchHeader {
  int64_t collection_id = 0;
  std::string partition;
  uint32_t dim = 0;
};
// Reads the wire format as protobuf does (the last value of a field wins; unknown fields and
// fields with an unexpected wire type are skipped) and checks nothing else, so it agrees with
// DecodeInsertBatch on every payload that decodes. INVALID_ARGUMENT when the bytes are not a
// protobuf message.
absl::StatusOr<InsertBatchHeader> PeekInsertBatch(std::string_view payload);
// At least one pk.
absl::StatusOr<kingfisher::v1::DeletePks> DecodeDeletePks(std::string_view payload);
// Name non-empty, dim 1..kMaxDim, metric L2|IP|COSINE, shards 1..kMaxShards.
absl::StatusOr<kingfisher::v1::CollectionSchema> DecodeCollectionSchema(std::string_view payload);
// Parses the DropCollection payload (any collection id).
absl::StatusOr<kingfisher::v1::DropCollection> DecodeDropCollection(std::string_view payload);
// CreatePartition / DropPartition: partition name non-empty.
absl::StatusOr<kingfisher::v1::PartitionPayload> DecodePartition(std::string_view payload);

}  // namespace kf
