#include "cli/args.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
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
  EXPECT_EQ(b.consume.policy.id, kingfisher::MessageId::Local(42));

  Args c;
  ASSERT_FALSE(Parse({"consume", "--vchannel", "v", "--after", "local:7"}, &c).exit_code);
  EXPECT_EQ(c.consume.policy.kind, kingfisher::DeliverPolicy::Kind::kStartAfter);
  EXPECT_EQ(c.consume.policy.id, kingfisher::MessageId::Local(7));

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

TEST(ArgsTest, CollectionCreateDefaultsAndFlags) {
  Args a;
  auto r = Parse({"collection", "create", "orders", "--dim", "128"}, &a);
  ASSERT_FALSE(r.exit_code) << r.err;
  EXPECT_EQ(a.command, Args::Command::kCollectionCreate);
  EXPECT_EQ(a.collection.name, "orders");
  EXPECT_EQ(a.collection.dim, 128u);
  EXPECT_EQ(a.collection.shards, 1u);
  EXPECT_EQ(a.collection.metric, "L2");

  Args b;
  ASSERT_FALSE(Parse({"collection", "create", "_x", "--dim", "32768", "--shards", "64", "--metric",
                      "cosine"},
                     &b)
                   .exit_code);
  EXPECT_EQ(b.collection.dim, 32768u);
  EXPECT_EQ(b.collection.shards, 64u);
  EXPECT_EQ(absl::AsciiStrToUpper(b.collection.metric), "COSINE");
}

TEST(ArgsTest, CollectionDropDescribeList) {
  Args a;
  ASSERT_FALSE(Parse({"collection", "drop", "orders"}, &a).exit_code);
  EXPECT_EQ(a.command, Args::Command::kCollectionDrop);
  EXPECT_EQ(a.collection.name, "orders");
  Args b;
  ASSERT_FALSE(Parse({"collection", "describe", "orders"}, &b).exit_code);
  EXPECT_EQ(b.command, Args::Command::kCollectionDescribe);
  EXPECT_EQ(b.collection.name, "orders");
  Args c;
  ASSERT_FALSE(Parse({"collection", "list"}, &c).exit_code);
  EXPECT_EQ(c.command, Args::Command::kCollectionList);
  Args d;
  ASSERT_FALSE(Parse({"flush", "orders"}, &d).exit_code);
  EXPECT_EQ(d.command, Args::Command::kFlush);
  EXPECT_EQ(d.collection.name, "orders");
}

TEST(ArgsTest, Insert) {
  Args a;
  auto r = Parse({"insert", "orders", "--rows", "10"}, &a);
  ASSERT_FALSE(r.exit_code) << r.err;
  EXPECT_EQ(a.command, Args::Command::kInsert);
  EXPECT_EQ(a.insert.collection, "orders");
  EXPECT_EQ(a.insert.rows, 10u);
  EXPECT_TRUE(a.insert.file.empty());
  EXPECT_FALSE(a.insert.txn);
  EXPECT_EQ(a.insert.partition, "");

  Args b;
  ASSERT_FALSE(
      Parse({"insert", "orders", "--file", "v.npy", "--txn", "--partition", "p1"}, &b).exit_code);
  EXPECT_FALSE(b.insert.rows);
  EXPECT_EQ(b.insert.file, "v.npy");
  EXPECT_TRUE(b.insert.txn);
  EXPECT_EQ(b.insert.partition, "p1");
}

TEST(ArgsTest, Delete) {
  Args a;
  auto r = Parse({"delete", "orders", "--pks", "1,-2,9223372036854775807"}, &a);
  ASSERT_FALSE(r.exit_code) << r.err;
  EXPECT_EQ(a.command, Args::Command::kDelete);
  EXPECT_EQ(a.del.collection, "orders");
  EXPECT_EQ(a.del.pks, (std::vector<int64_t>{1, -2, 9223372036854775807}));
}

TEST(ArgsTest, PkListIsStrict) {
  EXPECT_EQ(*ParsePkList("7"), (std::vector<int64_t>{7}));
  EXPECT_EQ(*ParsePkList("-9223372036854775808,0"), (std::vector<int64_t>{INT64_MIN, 0}));
  for (const char* bad :
       {"", ",", "1,", ",1", "1,,2", " 1", "1 ", "1, 2", "+1", "-", "1-", "0x10", "1.0", "1e3", "a",
        "9223372036854775808", "-9223372036854775809", "1;2", "1,2,1"}) {
    auto r = ParsePkList(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << "\"" << bad << "\"";
  }
  EXPECT_NE(std::string(ParsePkList("1,x").status().message()).find("item 2 \"x\""),
            std::string::npos);
  EXPECT_NE(std::string(ParsePkList("1,2,1").status().message()).find("duplicate pk 1"),
            std::string::npos);
}

TEST(ArgsTest, CollectionUsageErrorsExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"collection"}, "A subcommand is required"},
      {{"collection", "create", "orders"}, "--dim is required"},
      {{"collection", "create", "--dim", "4"}, "name is required"},
      {{"collection", "create", "orders", "--dim", "0"}, "--dim"},
      {{"collection", "create", "orders", "--dim", "32769"}, "--dim"},
      {{"collection", "create", "orders", "--dim", "4", "--shards", "0"}, "--shards"},
      {{"collection", "create", "orders", "--dim", "4", "--shards", "65"}, "--shards"},
      {{"collection", "create", "orders", "--dim", "4", "--metric", "hamming"}, "--metric"},
      {{"collection", "create", "9orders", "--dim", "4"}, "collection name '9orders'"},
      {{"collection", "create", "or-ders", "--dim", "4"}, "collection name"},
      {{"collection", "create", "orders", "--dim", "4", "--bogus"}, "--bogus"},
      {{"collection", "drop"}, "name is required"},
      {{"collection", "describe", "a", "b"}, "b"},
      {{"collection", "list", "--all"}, "--all"},
      {{"flush"}, "name is required"},
      {{"flush", "9orders"}, "collection name '9orders'"},
      {{"collection", "rename", "a"}, "subcommand is required"},
      {{"insert", "orders"}, "insert needs --rows N or --file PATH"},
      {{"insert", "orders", "--rows", "1", "--file", "v.npy"}, "excludes"},
      {{"insert", "orders", "--rows", "0"}, "--rows"},
      {{"insert", "orders", "--rows", "-1"}, "--rows"},
      {{"insert", "orders", "--rows", "1", "--partition", "p-1"}, "partition name 'p-1'"},
      {{"insert", "orders", "--rows", "1", "--rollback"}, "--rollback"},
      {{"insert", "--rows", "1"}, "name is required"},
      {{"delete", "orders"}, "--pks is required"},
      {{"delete", "orders", "--pks", "1,,2"}, "--pks: item 2"},
      {{"delete", "orders", "--pks", "1,a"}, "--pks: item 2 \"a\""},
      {{"delete", "orders", "--pks", "1 2"}, "--pks"},
      {{"delete", "orders", "--pks", "99999999999999999999"}, "--pks: item 1"},
  };
  for (const auto& [v, needle] : bad) {
    Args a;
    auto r = Parse(v, &a);
    std::string joined;
    for (auto& s : v) joined += s + " ";
    ASSERT_TRUE(r.exit_code) << joined;
    EXPECT_EQ(*r.exit_code, kExitUsage) << joined;
    EXPECT_NE(r.err.find(needle), std::string::npos) << joined << ": " << r.err;
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
