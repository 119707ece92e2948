#include "message/payload.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace kf {
namespace {

absl::Status Invalid(std::string_view what, const absl::AlphaNum& detail = "") {
  return StreamingError(StreamingCode::kInvalidArgument,
                        absl::StrCat(absl::string_view(what.data(), what.size()), detail));
}

template <typename Proto>
absl::StatusOr<Proto> Parse(std::string_view payload, std::string_view name) {
  Proto p;
  if (payload.size() > static_cast<size_t>(INT_MAX) ||
      !p.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return Invalid(name, " payload does not parse");
  }
  return p;
}

}  // namespace

absl::StatusOr<kingfisher::v1::InsertBatch> DecodeInsertBatch(std::string_view payload) {
  auto parsed = Parse<kingfisher::v1::InsertBatch>(payload, "Insert");
  if (!parsed.ok()) return parsed.status();
  if (absl::Status bad = CheckInsertBatch(*parsed); !bad.ok()) return bad;
  return parsed;
}

absl::Status CheckInsertBatch(const kingfisher::v1::InsertBatch& b) {
  if (b.pks_size() == 0) return Invalid("Insert has no rows");
  if (b.dim() == 0 || b.dim() > kMaxDim) {
    return Invalid("Insert dim must be 1..", absl::StrCat(kMaxDim, ", got ", b.dim()));
  }
  const uint64_t want = static_cast<uint64_t>(b.pks_size()) * b.dim();
  if (static_cast<uint64_t>(b.vectors_size()) != want) {
    return Invalid("Insert vectors", absl::StrCat(" has ", b.vectors_size(), " floats, want rows(",
                                                  b.pks_size(), ") * dim(", b.dim(), ") = ", want));
  }
  if (b.attributes_size() != 0 && b.attributes_size() != b.pks_size()) {
    return Invalid("Insert attributes",
                   absl::StrCat(" has ", b.attributes_size(), " entries, want 0 or one per row (",
                                b.pks_size(), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<InsertBatchHeader> PeekInsertBatch(std::string_view payload) {
  using google::protobuf::internal::WireFormatLite;
  if (payload.size() > static_cast<size_t>(INT_MAX)) return Invalid("Insert payload is too large");
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(payload.data()),
                                            static_cast<int>(payload.size()));
  InsertBatchHeader h;
  for (;;) {
    if (in.CurrentPosition() == static_cast<int>(payload.size())) return h;
    const uint32_t tag = in.ReadTag();
    if (tag == 0) break;  // a truncated tag or field number 0
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    const auto wire = WireFormatLite::GetTagWireType(tag);
    uint64_t varint = 0;
    if (field == kingfisher::v1::InsertBatch::kCollectionIdFieldNumber &&
        wire == WireFormatLite::WIRETYPE_VARINT) {
      if (!in.ReadVarint64(&varint)) break;
      h.collection_id = static_cast<int64_t>(varint);
    } else if (field == kingfisher::v1::InsertBatch::kDimFieldNumber &&
               wire == WireFormatLite::WIRETYPE_VARINT) {
      if (!in.ReadVarint64(&varint)) break;
      h.dim = static_cast<uint32_t>(varint);  // protobuf truncates a uint32 the same way
    } else if (field == kingfisher::v1::InsertBatch::kPartitionFieldNumber &&
               wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t len = 0;
      if (!in.ReadVarint32(&len) || !in.ReadString(&h.partition, static_cast<int>(len))) break;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      break;
    }
  }
  return Invalid("Insert payload does not parse");
}

absl::StatusOr<kingfisher::v1::DeletePks> DecodeDeletePks(std::string_view payload) {
  auto parsed = Parse<kingfisher::v1::DeletePks>(payload, "Delete");
  if (!parsed.ok()) return parsed.status();
  if (parsed->pks_size() == 0) return Invalid("Delete has no pks");
  return parsed;
}

absl::StatusOr<kingfisher::v1::CollectionSchema> DecodeCollectionSchema(std::string_view payload) {
  auto parsed = Parse<kingfisher::v1::CollectionSchema>(payload, "CreateCollection");
  if (!parsed.ok()) return parsed.status();
  const auto& s = *parsed;
  if (s.name().empty()) return Invalid("collection schema: name is empty");
  if (s.dim() == 0 || s.dim() > kMaxDim) {
    return Invalid("collection schema: dim must be 1..", absl::StrCat(kMaxDim, ", got ", s.dim()));
  }
  switch (s.metric()) {
    case kingfisher::v1::L2:
    case kingfisher::v1::IP:
    case kingfisher::v1::COSINE:
      break;
    default:
      return Invalid("collection schema: metric must be L2, IP or COSINE, got ",
                     static_cast<int>(s.metric()));
  }
  if (s.shards() == 0 || s.shards() > kMaxShards) {
    return Invalid("collection schema: shards must be 1..",
                   absl::StrCat(kMaxShards, ", got ", s.shards()));
  }
  return parsed;
}

absl::StatusOr<kingfisher::v1::DropCollection> DecodeDropCollection(std::string_view payload) {
  return Parse<kingfisher::v1::DropCollection>(payload, "DropCollection");
}

absl::StatusOr<kingfisher::v1::PartitionPayload> DecodePartition(std::string_view payload) {
  auto parsed = Parse<kingfisher::v1::PartitionPayload>(payload, "Partition");
  if (!parsed.ok()) return parsed.status();
  if (parsed->partition().empty()) return Invalid("partition payload: partition name is empty");
  return parsed;
}

}  // namespace kf
