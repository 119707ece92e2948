// Builders of collection messages for the tests of the collection rules (tests only): the
// coordinator's DDL copies with their broadcast header, and Inserts of a given dim.
#pragma once

#include <cstdint>
#include <string>

#include "kingfisher/v1/message.pb.h"
#include "message/builders.h"
#include "message/message.h"

namespace kf::wal::testing {

inline MutableMessage Broadcast(MutableMessage m, uint64_t broadcast_id) {
  kingfisher::v1::BroadcastHeader bh;
  bh.set_broadcast_id(broadcast_id);
  bh.add_vchannels(std::string(m.vchannel()));
  m.set_broadcast_header(bh);
  return m;
}

inline MutableMessage CreateCollection(const std::string& vchannel, int64_t collection_id,
                                       uint32_t dim, uint64_t broadcast_id, uint32_t shards = 2) {
  kingfisher::v1::CollectionSchema s;
  s.set_name("c" + std::to_string(collection_id));
  s.set_collection_id(collection_id);
  s.set_dim(dim);
  s.set_metric(kingfisher::v1::L2);
  s.set_shards(shards);
  return Broadcast(NewCreateCollectionMessage(vchannel, s), broadcast_id);
}

inline MutableMessage DropCollection(const std::string& vchannel, int64_t collection_id,
                                     uint64_t broadcast_id) {
  return Broadcast(NewDropCollectionMessage(vchannel, collection_id), broadcast_id);
}

inline MutableMessage PartitionDdl(MessageType type, const std::string& vchannel,
                                   int64_t collection_id, const std::string& partition,
                                   uint64_t broadcast_id) {
  kingfisher::v1::PartitionPayload p;
  p.set_collection_id(collection_id);
  p.set_partition(partition);
  MutableMessage m(type, p.SerializeAsString());
  m.set_vchannel(vchannel);
  return Broadcast(std::move(m), broadcast_id);
}

// One row of `dim` floats (collection id left unset, as the vchannel says it).
inline MutableMessage Insert(const std::string& vchannel, uint32_t dim, int64_t pk = 1,
                             const std::string& partition = "") {
  kingfisher::v1::InsertBatch b;
  b.set_partition(partition);
  b.set_dim(dim);
  b.add_pks(pk);
  for (uint32_t i = 0; i < dim; ++i) b.add_vectors(static_cast<float>(i));
  return NewInsertMessage(vchannel, b);
}

}  // namespace kf::wal::testing
