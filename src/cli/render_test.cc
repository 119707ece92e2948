#include "cli/render.h"

#include "gtest/gtest.h"
#include "kingfisher/v1/message.pb.h"

namespace kf::cli {
namespace {

TEST(RenderTest, Ack) {
  kingfisher::AppendResult r;
  r.id = kingfisher::MessageId::Local(42);
  r.timetick = kingfisher::TimeTick(uint64_t{1} << 60);
  EXPECT_EQ(RenderAck(r, "kf-dml_0_x"),
            R"({"message_id":"local:42","timetick":"1152921504606846976",)"
            R"("vchannel":"kf-dml_0_x","txn_id":null})");
  r.txn_id = kingfisher::TxnId(7);
  EXPECT_NE(RenderAck(r, "v").find(R"("txn_id":"7")"), std::string::npos);
}

TEST(RenderTest, ConsumedInsertCountsRows) {
  kingfisher::v1::InsertBatch b;
  b.set_dim(2);
  b.add_pks(1);
  b.add_pks(2);
  for (int i = 0; i < 4; ++i) b.add_vectors(0.5f);
  kingfisher::ConsumedMessage m;
  m.id = kingfisher::MessageId::Local(3);
  m.type = kingfisher::MessageType::kInsert;
  m.timetick = kingfisher::TimeTick(99);
  m.vchannel = "kf-dml_0_x";
  m.payload = b.SerializeAsString();
  m.properties = {{"_t", "2"}, {"_vc", "kf-dml_0_x"}, {"k\"", "v\n"}};
  EXPECT_EQ(RenderConsumed(m),
            R"({"message_id":"local:3","type":"Insert","timetick":"99","vchannel":"kf-dml_0_x",)"
            R"("txn_id":null,"rows":2,"properties":{"_t":"2","_vc":"kf-dml_0_x","k\"":"v\n"}})");
}

TEST(RenderTest, TimeTickAndTxn) {
  kingfisher::ConsumedMessage tick;
  tick.id = kingfisher::MessageId::Local(9);
  tick.type = kingfisher::MessageType::kTimeTick;
  tick.timetick = kingfisher::TimeTick(5);
  EXPECT_EQ(RenderConsumed(tick),
            R"({"message_id":"local:9","type":"TimeTick","timetick":"5","vchannel":"",)"
            R"("txn_id":null,"rows":null,"properties":{}})");

  kingfisher::ConsumedMessage txn;
  txn.id = kingfisher::MessageId::Local(12);
  txn.type = kingfisher::MessageType::kTxn;
  txn.timetick = kingfisher::TimeTick(20);
  kingfisher::ConsumedMessage begin;
  begin.id = kingfisher::MessageId::Local(10);
  begin.type = kingfisher::MessageType::kBeginTxn;
  txn.messages.push_back(begin);
  std::string s = RenderConsumed(txn);
  EXPECT_NE(s.find(R"("messages":[{"message_id":"local:10","type":"BeginTxn")"), std::string::npos)
      << s;
}

TEST(RenderTest, Status) {
  kingfisher::ClusterStatus s;
  s.nodes.push_back({1, "127.0.0.1:19530", "ONLINE"});
  s.pchannels.push_back({"kf-dml_0", 1, 3, "ASSIGNED"});
  EXPECT_EQ(RenderStatus(s),
            R"({"nodes":[{"id":1,"address":"127.0.0.1:19530","state":"ONLINE"}],)"
            R"("pchannels":[{"pchannel":"kf-dml_0","node":1,"term":3,"state":"ASSIGNED"}]})");
}

// Timeticks exceed 2^53, where a JSON number loses digits in most parsers (jq, JavaScript):
// they are strings, as in the acks.
TEST(RenderTest, StatusDataTimeticksAreStrings) {
  kingfisher::ClusterStatus s;
  kingfisher::PChannelStatus p{"kf-dml_0", 1, 3, "ASSIGNED"};
  kingfisher::PChannelData d;
  d.tsafe = 470961862482853889;
  d.checkpoint_timetick = 470961862482853888;
  p.data = d;
  s.pchannels.push_back(p);
  const std::string out = RenderStatus(s);
  EXPECT_NE(out.find(R"("tsafe":"470961862482853889")"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("checkpoint_timetick":"470961862482853888")"), std::string::npos) << out;
}

TEST(RenderTest, FlushedTimeticksAreStrings) {
  EXPECT_EQ(
      RenderFlushed("books", {{"kf-dml_0_1v0", 470961862482853889, 470961862482853890}}),
      R"({"collection":"books","shards":[{"vchannel":"kf-dml_0_1v0",)"
      R"("flush_timetick":"470961862482853889","checkpoint_timetick":"470961862482853890"}]})");
}

kingfisher::CollectionInfo Orders() {
  kingfisher::CollectionInfo c;
  c.id = 7;
  c.database = "default";
  c.name = "orders";
  c.dim = 128;
  c.metric = "L2";
  c.shards = 2;
  c.vchannels = {"kf-dml_0_7v0", "kf-dml_1_7v1"};
  c.state = "CREATED";
  c.partitions = {{"_default", "CREATED"}, {"p1", "CREATING"}};
  c.create_time_ms = 1700000000123;
  return c;
}

TEST(RenderTest, Collection) {
  EXPECT_EQ(RenderCollection(Orders()),
            R"({"id":7,"database":"default","name":"orders","dim":128,"metric":"L2","shards":2,)"
            R"("vchannels":["kf-dml_0_7v0","kf-dml_1_7v1"],"state":"CREATED",)"
            R"("partitions":[{"name":"_default","state":"CREATED"},)"
            R"({"name":"p1","state":"CREATING"}],"create_time_ms":1700000000123})");
}

TEST(RenderTest, CollectionList) {
  EXPECT_EQ(RenderCollections({}), R"({"collections":[]})");
  kingfisher::CollectionInfo bare;
  bare.id = 8;
  bare.name = "x";
  EXPECT_EQ(RenderCollections({Orders(), bare}),
            R"({"collections":[)" + RenderCollection(Orders()) +
                R"(,{"id":8,"database":"","name":"x","dim":0,"metric":"","shards":0,)"
                R"("vchannels":[],"state":"","partitions":[],"create_time_ms":0}]})");
}

TEST(RenderTest, RowsAckListsShortPkLists) {
  kingfisher::AppendResult r;
  r.id = kingfisher::MessageId::Local(5);
  r.timetick = kingfisher::TimeTick(99);
  EXPECT_EQ(RenderRowsAck(r, "kf-dml_0_7v0", {470795705276170240, -3}),
            R"({"message_id":"local:5","timetick":"99","vchannel":"kf-dml_0_7v0","txn_id":null,)"
            R"("rows":2,"first_pk":"470795705276170240","last_pk":"-3",)"
            R"("pks":["470795705276170240","-3"]})");
  std::vector<int64_t> many(kMaxListedPks + 1);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<int64_t>(i) + 10;
  r.txn_id = kingfisher::TxnId(4);
  EXPECT_EQ(RenderRowsAck(r, "v", many),
            R"({"message_id":"local:5","timetick":"99","vchannel":"v","txn_id":"4",)"
            R"("rows":17,"first_pk":"10","last_pk":"26","pks":null})");
  many.pop_back();
  EXPECT_NE(RenderRowsAck(r, "v", many).find(R"("pks":["10",)"), std::string::npos);
}

}  // namespace
}  // namespace kf::cli
