// End-to-end tests of `kfctl` (docs/semantics.md §8) against the real `kingfisher run standalone`
// server: both binaries run as child processes; kfctl's JSON output is parsed with nlohmann::json,
// a parser we did not write.

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kfctl_fixture.h"
#include "nlohmann/json.hpp"

namespace kf::testing {
namespace {

using KfctlTest = KfctlServerTest;

bool IsDecimal(const nlohmann::json& j) {
  if (!j.is_string()) return false;
  const std::string& s = j.get_ref<const std::string&>();
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

TEST_F(KfctlTest, ProduceThenConsumeGivesTheSameIdsInTimetickOrder) {
  const std::string vchannel = "kf-dml_1_kfctl_roundtrip";
  auto produced = Run({"produce", "--vchannel", vchannel, "--count", "20", "--concurrency", "4",
                       "--rows", "3", "--dim", "4"});
  ASSERT_EQ(produced.exit_code, 0) << Describe(produced);
  ASSERT_TRUE(produced.all_lines_parse) << Describe(produced);
  ASSERT_EQ(produced.lines.size(), 20u) << Describe(produced);
  std::set<std::string> produced_ids;
  for (const auto& j : produced.lines) {
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j.size(), 4u) << j.dump();
    ASSERT_TRUE(j["message_id"].is_string()) << j.dump();
    EXPECT_EQ(j["message_id"].get<std::string>().find(' '), std::string::npos);
    EXPECT_TRUE(IsDecimal(j["timetick"])) << j.dump();
    EXPECT_EQ(j["vchannel"], vchannel);
    EXPECT_TRUE(j["txn_id"].is_null());
    produced_ids.insert(j["message_id"].get<std::string>());
  }
  EXPECT_EQ(produced_ids.size(), 20u);

  auto consumed = Run({"consume", "--vchannel", vchannel, "--from", "earliest", "--limit", "20",
                       "--idle-timeout", "20"});
  ASSERT_EQ(consumed.exit_code, 0) << Describe(consumed);
  ASSERT_TRUE(consumed.all_lines_parse) << Describe(consumed);
  ASSERT_EQ(consumed.lines.size(), 20u) << Describe(consumed);
  std::set<std::string> consumed_ids;
  uint64_t last_tt = 0;
  for (const auto& j : consumed.lines) {
    ASSERT_TRUE(j["message_id"].is_string()) << j.dump();
    consumed_ids.insert(j["message_id"].get<std::string>());
    EXPECT_EQ(j["type"], "Insert");
    ASSERT_TRUE(IsDecimal(j["timetick"])) << j.dump();
    uint64_t tt = std::stoull(j["timetick"].get<std::string>());
    EXPECT_GT(tt, last_tt) << "timeticks must be strictly increasing";
    last_tt = tt;
    EXPECT_EQ(j["vchannel"], vchannel);
    EXPECT_TRUE(j["txn_id"].is_null());
    EXPECT_EQ(j["rows"], 3);
    ASSERT_TRUE(j["properties"].is_object());
    EXPECT_TRUE(j["properties"].contains("_ik")) << j.dump();
    EXPECT_TRUE(j["properties"].contains("_tc")) << j.dump();
    EXPECT_EQ(j["properties"]["_vc"], vchannel);
  }
  EXPECT_EQ(consumed_ids, produced_ids);

  // --from <id> is inclusive, --after <id> exclusive; the ids kfctl printed are accepted back.
  const std::string first = consumed.lines.front()["message_id"];
  const std::string last = consumed.lines.back()["message_id"];
  auto from = Run(
      {"consume", "--vchannel", vchannel, "--from", first, "--limit", "1", "--idle-timeout", "20"});
  ASSERT_EQ(from.exit_code, 0) << Describe(from);
  ASSERT_EQ(from.lines.size(), 1u) << Describe(from);
  EXPECT_EQ(from.lines[0]["message_id"], first);
  auto after = Run({"consume", "--vchannel", vchannel, "--after", last, "--idle-timeout", "1"});
  ASSERT_EQ(after.exit_code, 0) << Describe(after);
  EXPECT_TRUE(after.lines.empty()) << Describe(after);
}

TEST_F(KfctlTest, StatusHasTheDocumentedShape) {
  auto r = Run({"status"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  ASSERT_EQ(r.lines.size(), 1u) << Describe(r);
  const auto& j = r.lines[0];
  ASSERT_TRUE(j["nodes"].is_array()) << j.dump();
  ASSERT_FALSE(j["nodes"].empty()) << j.dump();
  for (const auto& n : j["nodes"]) {
    EXPECT_TRUE(n.contains("id") && n.contains("address") && n.contains("state")) << n.dump();
  }
  ASSERT_TRUE(j["pchannels"].is_array()) << j.dump();
  EXPECT_EQ(j["pchannels"].size(), 4u) << j.dump();
  for (const auto& p : j["pchannels"]) {
    EXPECT_TRUE(p.contains("pchannel") && p.contains("node") && p.contains("term") &&
                p.contains("state"))
        << p.dump();
  }
}

TEST_F(KfctlTest, UnknownPChannelFailsWithAnErrorOnStderr) {
  auto produced = Run({"produce", "--vchannel", "kf-dml_9_x"});
  EXPECT_NE(produced.exit_code, 0) << Describe(produced);
  EXPECT_FALSE(produced.err.empty()) << Describe(produced);
  EXPECT_TRUE(produced.out.empty()) << Describe(produced);

  auto consumed = Run({"consume", "--vchannel", "kf-dml_9_x", "--idle-timeout", "5"});
  EXPECT_NE(consumed.exit_code, 0) << Describe(consumed);
  EXPECT_FALSE(consumed.err.empty()) << Describe(consumed);
}

TEST_F(KfctlTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Run({"produce", "--vchannel", "kf-dml_0_x", "--bogus"}).exit_code, 2);
  EXPECT_EQ(Run({"consume", "--vchannel", "kf-dml_0_x", "--from", "yesterday"}).exit_code, 2);
  auto rollback = Run({"produce", "--vchannel", "kf-dml_0_x", "--rollback"});
  EXPECT_EQ(rollback.exit_code, 2) << Describe(rollback);
  EXPECT_NE(rollback.err.find("--rollback requires --txn"), std::string::npos)
      << Describe(rollback);
}

// docs/semantics.md §3/§8: produce --txn appends all messages in one transaction and prints their
// acks once the commit is acknowledged; a consumer sees exactly one Txn message holding Begin, the
// bodies and Commit.
TEST_F(KfctlTest, ProduceTxnIsConsumedAsOneTxnMessage) {
  const std::string vchannel = "kf-dml_2_kfctl_txn";
  auto produced =
      Run({"produce", "--vchannel", vchannel, "--count", "3", "--concurrency", "2", "--txn"});
  ASSERT_EQ(produced.exit_code, 0) << Describe(produced);
  ASSERT_TRUE(produced.all_lines_parse) << Describe(produced);
  ASSERT_EQ(produced.lines.size(), 3u) << Describe(produced);
  const nlohmann::json txn_id = produced.lines[0]["txn_id"];
  ASSERT_TRUE(IsDecimal(txn_id)) << Describe(produced);
  std::set<std::string> produced_ids;
  for (const auto& j : produced.lines) {
    EXPECT_EQ(j.size(), 4u) << j.dump();
    EXPECT_EQ(j["txn_id"], txn_id) << j.dump();
    EXPECT_EQ(j["vchannel"], vchannel);
    produced_ids.insert(j["message_id"].get<std::string>());
  }
  EXPECT_EQ(produced_ids.size(), 3u);

  auto consumed =
      Run({"consume", "--vchannel", vchannel, "--from", "earliest", "--idle-timeout", "3"});
  ASSERT_EQ(consumed.exit_code, 0) << Describe(consumed);
  ASSERT_TRUE(consumed.all_lines_parse) << Describe(consumed);
  ASSERT_EQ(consumed.lines.size(), 1u) << "exactly one Txn message: " << Describe(consumed);
  const auto& txn = consumed.lines[0];
  EXPECT_EQ(txn["type"], "Txn") << txn.dump();
  EXPECT_EQ(txn["txn_id"], txn_id) << txn.dump();
  EXPECT_EQ(txn["vchannel"], vchannel) << txn.dump();
  ASSERT_TRUE(txn["messages"].is_array()) << txn.dump();
  const auto& inner = txn["messages"];
  ASSERT_EQ(inner.size(), 5u) << txn.dump();
  EXPECT_EQ(inner.front()["type"], "BeginTxn") << txn.dump();
  EXPECT_EQ(inner.back()["type"], "CommitTxn") << txn.dump();
  std::set<std::string> inner_ids;
  for (size_t i = 1; i + 1 < inner.size(); ++i) {
    EXPECT_EQ(inner[i]["type"], "Insert") << inner[i].dump();
    EXPECT_EQ(inner[i]["txn_id"], txn_id) << inner[i].dump();
    EXPECT_EQ(inner[i]["rows"], 1) << inner[i].dump();
    inner_ids.insert(inner[i]["message_id"].get<std::string>());
  }
  EXPECT_EQ(inner_ids, produced_ids) << "the bodies are the acknowledged messages";
  // The Txn is delivered at the commit: its timetick is the CommitTxn's.
  EXPECT_EQ(txn["timetick"], inner.back()["timetick"]) << txn.dump();
}

// --rollback: nothing of the transaction is ever delivered. A plain message appended after it
// proves the consumer read past where the transaction was.
TEST_F(KfctlTest, ProduceTxnRollbackIsNeverConsumed) {
  const std::string vchannel = "kf-dml_3_kfctl_rollback";
  auto rolled_back =
      Run({"produce", "--vchannel", vchannel, "--count", "3", "--txn", "--rollback"});
  ASSERT_EQ(rolled_back.exit_code, 0) << Describe(rolled_back);
  EXPECT_TRUE(rolled_back.out.empty()) << Describe(rolled_back);
  auto marker = Run({"produce", "--vchannel", vchannel});
  ASSERT_EQ(marker.exit_code, 0) << Describe(marker);
  ASSERT_EQ(marker.lines.size(), 1u) << Describe(marker);

  auto consumed =
      Run({"consume", "--vchannel", vchannel, "--from", "earliest", "--idle-timeout", "3"});
  ASSERT_EQ(consumed.exit_code, 0) << Describe(consumed);
  ASSERT_EQ(consumed.lines.size(), 1u) << Describe(consumed);
  EXPECT_EQ(consumed.lines[0]["type"], "Insert") << Describe(consumed);
  EXPECT_EQ(consumed.lines[0]["message_id"], marker.lines[0]["message_id"]) << Describe(consumed);
  EXPECT_TRUE(consumed.lines[0]["txn_id"].is_null()) << Describe(consumed);
}

}  // namespace
}  // namespace kf::testing
