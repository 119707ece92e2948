#include "cli/args.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kf::cli {
namespace {

ParseResult Parse(std::vector<std::string> v, Args* a) {
  v.insert(v.begin(), "kfctl");
  return ParseArgs(v, a);
}

TEST(ArgsTest, ProduceDefaults) {
  Args a;
  auto r = Parse({"produce", "--vchannel", "kf-dml_0_x"}, &a);
  ASSERT_FALSE(r.exit_code) << r.err;
  EXPECT_EQ(a.command, Args::Command::kProduce);
  EXPECT_EQ(a.endpoint, "127.0.0.1:19530");
  EXPECT_EQ(a.produce.vchannel, "kf-dml_0_x");
  EXPECT_EQ(a.produce.count, 1u);
  EXPECT_EQ(a.produce.rows, 1u);
  EXPECT_EQ(a.produce.dim, 8u);
  EXPECT_EQ(a.produce.concurrency, 1u);
  EXPECT_FALSE(a.produce.txn);
}

TEST(ArgsTest, ProduceAllFlagsAndGlobals) {
  Args a;
  auto r = Parse({"--endpoint", "127.0.0.1:1", "--timeout", "2.5", "produce", "--vchannel", "v",
                  "--count", "20", "--rows", "3", "--dim", "4", "--concurrency", "4", "--txn"},
                 &a);
  ASSERT_FALSE(r.exit_code) << r.err;
  EXPECT_EQ(a.endpoint, "127.0.0.1:1");
  EXPECT_DOUBLE_EQ(a.timeout_seconds, 2.5);
  EXPECT_EQ(a.produce.count, 20u);
  EXPECT_EQ(a.produce.rows, 3u);
  EXPECT_EQ(a.produce.dim, 4u);
  EXPECT_EQ(a.produce.concurrency, 4u);
  EXPECT_TRUE(a.produce.txn);
  EXPECT_FALSE(a.produce.rollback);
}

TEST(ArgsTest, RollbackNeedsTxn) {
  Args a;
  auto r = Parse({"produce", "--vchannel", "v", "--rollback"}, &a);
  ASSERT_TRUE(r.exit_code);
  EXPECT_EQ(*r.exit_code, kExitUsage);
  EXPECT_NE(r.err.find("--rollback requires --txn"), std::string::npos) << r.err;

  Args b;
  ASSERT_FALSE(Parse({"produce", "--vchannel", "v", "--txn", "--rollback"}, &b).exit_code);
  EXPECT_TRUE(b.produce.txn);
  EXPECT_TRUE(b.produce.rollback);
}

TEST(ArgsTest, ProduceHelpDocumentsTxnAndRollback) {
  Args a;
  auto r = Parse({"produce", "--help"}, &a);
  ASSERT_TRUE(r.exit_code);
  EXPECT_EQ(*r.exit_code, kExitOk);
  EXPECT_NE(r.out.find("--txn"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--rollback"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("prints nothing and exits 0"), std::string::npos) << r.out;
}

TEST(ArgsTest, ConsumeDefaultsToLatest) {
  Args a;
  auto r = Parse({"consume", "--vchannel", "kf-dml_0_x"}, &a);
  ASSERT_FALSE(r.exit_code) << r.err;
  EXPECT_EQ(a.command, Args::Command::kConsume);
  EXPECT_EQ(a.consume.policy.kind, kingfisher::DeliverPolicy::Kind::kLatest);
  EXPECT_FALSE(a.consume.limit);
  EXPECT_FALSE(a.consume.idle_timeout_seconds);
  EXPECT_FALSE(a.consume.with_timeticks);
}

TEST(ArgsTest, ConsumePolicies) {
  Args a;
  ASSERT_FALSE(Parse({"consume", "--vchannel", "v", "--from", "earliest", "--limit", "20",
                      "--idle-timeout", "1.5", "--with-timeticks"},
                     &a)
                   .exit_code);
  EXPECT_EQ(a.consume.policy.kind, kingfisher::DeliverPolicy::Kind::kAll);
  EXPECT_EQ(a.consume.limit, 20u);
  EXPECT_DOUBLE_EQ(*a.consume.idle_timeout_seconds, 1.5);
  EXPECT_TRUE(a.consume.with_timeticks);

  Args b;
  ASSERT_FALSE(Parse({"consume", "--vchannel", "v", "--from", "local:42"}, &b).exit_code);
  EXPECT_EQ(b.consume.policy.kind, kingfisher::DeliverPolicy::Kind::kStartFrom);
  EXPECT_EQ(b.consume.policy.id, MessageId::Local(42));

  Args c;
  ASSERT_FALSE(Parse({"consume", "--vchannel", "v", "--after", "local:7"}, &c).exit_code);
  EXPECT_EQ(c.consume.policy.kind, kingfisher::DeliverPolicy::Kind::kStartAfter);
  EXPECT_EQ(c.consume.policy.id, MessageId::Local(7));

  Args d;
  ASSERT_FALSE(Parse({"consume", "--vchannel", "v", "--from", "latest"}, &d).exit_code);
  EXPECT_EQ(d.consume.policy.kind, kingfisher::DeliverPolicy::Kind::kLatest);
}

TEST(ArgsTest, UsageErrorsExitTwo) {
  const std::vector<std::vector<std::string>> bad = {
      {"consume", "--vchannel", "v", "--from", "yesterday"},
      {"consume", "--vchannel", "v", "--from", "local:"},
      {"consume", "--vchannel", "v", "--after", "earliest"},
      {"consume", "--vchannel", "v", "--from", "earliest", "--after", "local:1"},
      {"consume", "--vchannel", "v", "--limit", "-1"},
      {"produce"},  // --vchannel is required
      {"produce", "--vchannel", "v", "--count", "x"},
      {"produce", "--vchannel", "v", "--rows", "0"},
      {"produce", "--vchannel", "v", "--concurrency", "0"},
      {"produce", "--vchannel", "v", "--bogus"},  // unknown flag
      {"--timeout", "0", "status"},
      {"frobnicate"},
      {},
  };
  for (const auto& v : bad) {
    Args a;
    auto r = Parse(v, &a);
    std::string joined;
    for (auto& s : v) joined += s + " ";
    ASSERT_TRUE(r.exit_code) << joined;
    EXPECT_EQ(*r.exit_code, kExitUsage) << joined;
    EXPECT_FALSE(r.err.empty()) << joined;
  }
}

TEST(ArgsTest, HelpExitsZero) {
  Args a;
  auto r = Parse({"--help"}, &a);
  ASSERT_TRUE(r.exit_code);
  EXPECT_EQ(*r.exit_code, 0);
  EXPECT_NE(r.out.find("produce"), std::string::npos);
}

TEST(ArgsTest, PolicyFromFlags) {
  EXPECT_EQ(PolicyFromFlags(std::nullopt, std::nullopt)->kind,
            kingfisher::DeliverPolicy::Kind::kLatest);
  EXPECT_FALSE(PolicyFromFlags(std::string("nope"), std::nullopt).ok());
  EXPECT_EQ(PolicyFromFlags(std::string("nope"), std::nullopt).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kf::cli
