#include "client/collection_convert.h"

#include "absl/strings/str_cat.h"

namespace kf::client {
namespace {

namespace v1 = kingfisher::v1;

std::string Unknown(int value) { return absl::StrCat("UNKNOWN(", value, ")"); }

}  // namespace

std::string MetricName(v1::MetricType metric) {
  switch (metric) {
    case v1::L2:
      return "L2";
    case v1::IP:
      return "IP";
    case v1::COSINE:
      return "COSINE";
    default:
      return Unknown(metric);
  }
}

std::string CollectionStateName(v1::CollectionState s) {
  switch (s) {
    case v1::COLLECTION_CREATING:
      return "CREATING";
    case v1::COLLECTION_CREATED:
      return "CREATED";
    case v1::COLLECTION_DROPPING:
      return "DROPPING";
    case v1::COLLECTION_DROPPED:
      return "DROPPED";
    default:
      return Unknown(s);
  }
}

std::string PartitionStateName(v1::PartitionState s) {
  switch (s) {
    case v1::PARTITION_CREATING:
      return "CREATING";
    case v1::PARTITION_CREATED:
      return "CREATED";
    case v1::PARTITION_DROPPING:
      return "DROPPING";
    default:
      return Unknown(s);
  }
}

kingfisher::CollectionInfo ToCollectionInfo(const v1::CollectionInfo& info) {
  kingfisher::CollectionInfo out;
  const v1::CollectionSchema& schema = info.schema();
  out.id = schema.collection_id();
  out.database = info.database();
  out.name = schema.name();
  out.dim = schema.dim();
  out.metric = MetricName(schema.metric());
  out.shards = schema.shards();
  out.vchannels.assign(schema.vchannels().begin(), schema.vchannels().end());
  out.state = CollectionStateName(info.state());
  for (const v1::PartitionInfo& p : info.partitions()) {
    out.partitions.push_back({p.name(), PartitionStateName(p.state())});
  }
  out.create_time_ms = info.create_time_ms();
  return out;
}

}  // namespace kf::client
