#include "message/payload.h"

#include <gtest/gtest.h>

#include "common/errors.h"

namespace kf {
namespace {

using kingfisher::v1::CollectionSchema;
using kingfisher::v1::DeletePks;
using kingfisher::v1::InsertBatch;

InsertBatch GoodBatch() {
  InsertBatch b;
  b.set_collection_id(7);
  b.set_partition("_default");
  b.set_dim(2);
  for (int i = 0; i < 3; ++i) {
    b.add_pks(i);
    b.add_vectors(i);
    b.add_vectors(-i);
  }
  return b;
}

CollectionSchema GoodSchema() {
  CollectionSchema s;
  s.set_name("orders");
  s.set_collection_id(7);
  s.set_dim(128);
  s.set_metric(kingfisher::v1::COSINE);
  s.set_shards(2);
  s.add_vchannels("kf-dml_0_7v0");
  s.add_vchannels("kf-dml_1_7v1");
  return s;
}

void ExpectInvalid(const absl::Status& s, std::string_view needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(GetStreamingCode(s), StreamingCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find(needle), std::string::npos)
      << "message '" << s.message() << "' lacks '" << needle << "'";
}

TEST(PayloadTest, InsertBatchAccepted) {
  auto b = DecodeInsertBatch(GoodBatch().SerializeAsString());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->pks_size(), 3);
  EXPECT_EQ(b->vectors_size(), 6);

  InsertBatch with_attrs = GoodBatch();
  for (int i = 0; i < 3; ++i) with_attrs.add_attributes("{}");
  EXPECT_TRUE(DecodeInsertBatch(with_attrs.SerializeAsString()).ok());
}

TEST(PayloadTest, InsertBatchRejected) {
  ExpectInvalid(DecodeInsertBatch("\xff\xff").status(), "does not parse");
  ExpectInvalid(DecodeInsertBatch("").status(), "no rows");

  InsertBatch b = GoodBatch();
  b.set_dim(0);
  ExpectInvalid(DecodeInsertBatch(b.SerializeAsString()).status(), "dim");
  b.set_dim(kMaxDim + 1);
  ExpectInvalid(DecodeInsertBatch(b.SerializeAsString()).status(), "dim");

  b = GoodBatch();
  b.add_vectors(1);
  ExpectInvalid(DecodeInsertBatch(b.SerializeAsString()).status(), "vectors");
  b = GoodBatch();
  b.set_dim(3);
  ExpectInvalid(DecodeInsertBatch(b.SerializeAsString()).status(), "vectors");

  b = GoodBatch();
  b.add_attributes("{}");
  ExpectInvalid(DecodeInsertBatch(b.SerializeAsString()).status(), "attributes");
}

TEST(PayloadTest, PeekInsertBatchReadsTheHeader) {
  auto h = PeekInsertBatch(GoodBatch().SerializeAsString());
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->collection_id, 7);
  EXPECT_EQ(h->partition, "_default");
  EXPECT_EQ(h->dim, 2u);
  // Last value wins, as in protobuf; an unknown field and a known field with another wire type
  // are skipped.
  InsertBatch b;
  b.set_dim(3);
  b.set_partition("p");
  std::string twice = GoodBatch().SerializeAsString() + b.SerializeAsString();
  twice += std::string("\x78\x05", 2);      // field 15, varint 5
  twice += std::string("\x22\x01\x09", 3);  // field 4 (dim) as 1 length-delimited byte
  h = PeekInsertBatch(twice);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->dim, 3u);
  EXPECT_EQ(h->partition, "p");
  EXPECT_EQ(h->collection_id, 7);
  auto empty = PeekInsertBatch("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->dim, 0u);
}

TEST(PayloadTest, PeekInsertBatchRejectsNonProtobuf) {
  for (std::string bad : {std::string("\xff\xff"), std::string("\x08"),
                          std::string("\x12\x05"
                                      "ab"),
                          std::string("\x00\x01", 2), std::string("\x0c", 1)}) {
    ExpectInvalid(PeekInsertBatch(bad).status(), "does not parse");
  }
}

TEST(PayloadTest, DeletePks) {
  DeletePks d;
  d.add_pks(5);
  auto ok = DecodeDeletePks(d.SerializeAsString());
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->pks(0), 5);
  ExpectInvalid(DecodeDeletePks("").status(), "no pks");
  ExpectInvalid(DecodeDeletePks("\x0a\x05").status(), "does not parse");
}

TEST(PayloadTest, CollectionSchemaAccepted) {
  for (auto metric : {kingfisher::v1::L2, kingfisher::v1::IP, kingfisher::v1::COSINE}) {
    CollectionSchema s = GoodSchema();
    s.set_metric(metric);
    EXPECT_TRUE(DecodeCollectionSchema(s.SerializeAsString()).ok());
  }
  CollectionSchema edge = GoodSchema();
  edge.set_dim(kMaxDim);
  edge.set_shards(kMaxShards);
  EXPECT_TRUE(DecodeCollectionSchema(edge.SerializeAsString()).ok());
}

TEST(PayloadTest, CollectionSchemaRejected) {
  CollectionSchema s = GoodSchema();
  s.clear_name();
  ExpectInvalid(DecodeCollectionSchema(s.SerializeAsString()).status(), "name");
  for (uint32_t dim : {0u, kMaxDim + 1}) {
    s = GoodSchema();
    s.set_dim(dim);
    ExpectInvalid(DecodeCollectionSchema(s.SerializeAsString()).status(), "dim");
  }
  s = GoodSchema();
  s.set_metric(kingfisher::v1::METRIC_UNSPECIFIED);
  ExpectInvalid(DecodeCollectionSchema(s.SerializeAsString()).status(), "metric");
  s.set_metric(static_cast<kingfisher::v1::MetricType>(42));
  ExpectInvalid(DecodeCollectionSchema(s.SerializeAsString()).status(), "metric");
  for (uint32_t shards : {0u, kMaxShards + 1}) {
    s = GoodSchema();
    s.set_shards(shards);
    ExpectInvalid(DecodeCollectionSchema(s.SerializeAsString()).status(), "shards");
  }
  ExpectInvalid(DecodeCollectionSchema("\x0a").status(), "does not parse");
}

TEST(PayloadTest, DropCollection) {
  kingfisher::v1::DropCollection d;
  d.set_collection_id(9);
  auto ok = DecodeDropCollection(d.SerializeAsString());
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->collection_id(), 9);
  ExpectInvalid(DecodeDropCollection("\x08").status(), "does not parse");
}

TEST(PayloadTest, Partition) {
  kingfisher::v1::PartitionPayload p;
  p.set_collection_id(9);
  p.set_partition("p1");
  auto ok = DecodePartition(p.SerializeAsString());
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->partition(), "p1");
  p.clear_partition();
  ExpectInvalid(DecodePartition(p.SerializeAsString()).status(), "partition name is empty");
  ExpectInvalid(DecodePartition("\x08").status(), "does not parse");
}

}  // namespace
}  // namespace kf
