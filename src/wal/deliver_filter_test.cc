#include "wal/deliver_filter.h"

#include <gtest/gtest.h>

#include "message/message.h"

namespace kf::wal {
namespace {

ImmutableMessage Msg(MessageType type, uint64_t tt, bool in_txn = false) {
  MutableMessage m(type, "p");
  m.set_vchannel("kf-dml_0_orders");
  m.set_timetick(TimeTick(tt));
  if (in_txn) {
    kingfisher::v1::TxnContext txn;
    txn.set_txn_id(7);
    txn.set_keepalive_ms(1000);
    m.set_txn(txn);
  }
  return ImmutableMessage(MessageId::Local(1), std::move(m));
}

google::protobuf::RepeatedPtrField<kingfisher::v1::DeliverFilter> Filters() { return {}; }

TEST(DeliverFilterTest, EmptyPassesEverything) {
  DeliverFilter f;
  EXPECT_TRUE(f.Pass(Msg(MessageType::kInsert, 1)));
  EXPECT_TRUE(f.Pass(Msg(MessageType::kTimeTick, 1)));
}

TEST(DeliverFilterTest, TimeTickGtAndGteAnd) {
  auto fs = Filters();
  fs.Add()->set_timetick_gt(10);
  fs.Add()->set_timetick_gte(12);
  auto f = DeliverFilter::Parse(fs);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_FALSE(f->Pass(Msg(MessageType::kInsert, 10)));
  EXPECT_FALSE(f->Pass(Msg(MessageType::kInsert, 11)));
  EXPECT_TRUE(f->Pass(Msg(MessageType::kInsert, 12)));
}

TEST(DeliverFilterTest, TimeTickFilterSkipsTxnBodiesButNotCommit) {
  auto fs = Filters();
  fs.Add()->set_timetick_gt(100);
  auto f = DeliverFilter::Parse(fs);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->Pass(Msg(MessageType::kBeginTxn, 50, true)));
  EXPECT_TRUE(f->Pass(Msg(MessageType::kInsert, 51, true)));
  EXPECT_FALSE(f->Pass(Msg(MessageType::kCommitTxn, 52, true)));
  EXPECT_TRUE(f->Pass(Msg(MessageType::kCommitTxn, 101, true)));
  // The assembled Txn is judged by its commit's timetick.
  EXPECT_FALSE(f->Pass(Msg(MessageType::kTxn, 52, true)));
  EXPECT_TRUE(f->Pass(Msg(MessageType::kTxn, 101, true)));
}

TEST(DeliverFilterTest, BuildersMatchParse) {
  DeliverFilter f;
  f.AddTimeTickGT(TimeTick(10)).AddTypes({MessageType::kInsert});
  EXPECT_FALSE(f.Pass(Msg(MessageType::kInsert, 10)));
  EXPECT_TRUE(f.Pass(Msg(MessageType::kInsert, 11)));
  EXPECT_FALSE(f.Pass(Msg(MessageType::kDelete, 11)));
}

TEST(DeliverFilterTest, TypeFilterKeepsSystemTypes) {
  auto fs = Filters();
  fs.Add()->mutable_message_types()->add_types(static_cast<int>(MessageType::kDelete));
  auto f = DeliverFilter::Parse(fs);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->Pass(Msg(MessageType::kInsert, 1)));
  EXPECT_TRUE(f->Pass(Msg(MessageType::kDelete, 1)));
  EXPECT_TRUE(f->Pass(Msg(MessageType::kTimeTick, 1)));
  EXPECT_TRUE(f->Pass(Msg(MessageType::kCommitTxn, 1, true)));
}

TEST(DeliverFilterTest, RejectsUnknownTypeAndEmptyFilter) {
  auto fs = Filters();
  fs.Add()->mutable_message_types()->add_types(12345);
  EXPECT_TRUE(absl::IsInvalidArgument(DeliverFilter::Parse(fs).status()));
  auto empty = Filters();
  empty.Add();
  EXPECT_TRUE(absl::IsInvalidArgument(DeliverFilter::Parse(empty).status()));
}

}  // namespace
}  // namespace kf::wal
