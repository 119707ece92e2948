// kfctl insert / delete against FakeCollections (Describe, AllocateIds) and FakeStreamingNode
// (Produce, transactions) on one endpoint: routing by shard, message sizes, the printed acks,
// --txn per shard, vector files, and errors before anything is sent.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/capture_testing.h"
#include "cli/commands.h"
#include "cli/npy_testing.h"
#include "client/fake_collections.h"
#include "client/fake_streaming_node.h"
#include "common/errors.h"
#include "gtest/gtest.h"
#include "kingfisher/client.h"
#include "message/payload.h"

namespace kf::cli {
namespace {

using client::testing::FakeCollections;
using client::testing::FakeStreamingNode;
using testing::Capture;
namespace v1 = kingfisher::v1;

constexpr uint64_t kFirstPk = uint64_t{1} << 50;  // FakeCollections' first timestamp

class InsertCommandTest : public ::testing::Test {
 protected:
  InsertCommandTest() : node_("127.0.0.1:0", fake_.services()) {}

  // Creates "orders" through the client, as `kfctl collection create` would.
  kingfisher::CollectionInfo Create(uint32_t dim, uint32_t shards) {
    auto client = kingfisher::Client::Connect({.endpoint = node_.endpoint()});
    auto info = (*client)->CreateCollection({.name = "orders", .dim = dim, .shards = shards});
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? *info : kingfisher::CollectionInfo();
  }

  Args InsertArgsFor(uint64_t rows) {
    Args a;
    a.endpoint = node_.endpoint();
    a.insert.collection = "orders";
    a.insert.rows = rows;
    return a;
  }

  // The Insert batches the node appended, by vchannel, in append order.
  std::map<std::string, std::vector<v1::InsertBatch>> Batches() {
    std::map<std::string, std::vector<v1::InsertBatch>> out;
    for (const MutableMessage& m : node_.appended()) {
      if (m.type() != MessageType::kInsert) continue;
      auto b = DecodeInsertBatch(m.payload());
      EXPECT_TRUE(b.ok()) << b.status();
      out[std::string(m.vchannel())].push_back(*b);
    }
    return out;
  }

  std::string WriteFile(const std::string& name, const std::string& bytes) {
    const std::string path = ::testing::TempDir() + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  std::vector<std::string> Methods() {
    std::vector<std::string> out;
    for (const auto& c : fake_.calls()) out.push_back(c.method);
    return out;
  }

  FakeCollections fake_;
  FakeStreamingNode node_;
};

TEST_F(InsertCommandTest, RandomRowsAreRoutedByShardAndEveryAckPrinted) {
  const auto info = Create(4, 3);
  Capture out, err;
  ASSERT_EQ(RunInsert(InsertArgsFor(50), out.file(), err.file()), kExitOk) << err.Text();
  EXPECT_EQ(Methods(), (std::vector<std::string>{"CreateCollection", "DescribeCollection",
                                                 "AllocateTimestamps"}));
  EXPECT_EQ(fake_.calls().back().count, 50u);

  std::set<int64_t> seen;
  auto batches = Batches();
  ASSERT_EQ(batches.size(), 3u);  // 50 consecutive pks reach all 3 shards
  for (const auto& [vchannel, list] : batches) {
    ASSERT_EQ(list.size(), 1u) << vchannel;
    const v1::InsertBatch& b = list[0];
    EXPECT_EQ(b.collection_id(), info.id);
    EXPECT_EQ(b.dim(), 4u);
    EXPECT_EQ(b.partition(), "");
    EXPECT_EQ(b.vectors_size(), b.pks_size() * 4);
    for (float v : b.vectors()) {
      EXPECT_GE(v, -1.0f);
      EXPECT_LT(v, 1.0f);
    }
    for (int64_t pk : b.pks()) {
      EXPECT_EQ(info.vchannels[kingfisher::ShardOfPk(pk, 3)], vchannel) << pk;
      EXPECT_GE(pk, static_cast<int64_t>(kFirstPk));
      EXPECT_LT(pk, static_cast<int64_t>(kFirstPk + 50));
      EXPECT_TRUE(seen.insert(pk).second);
    }
  }
  EXPECT_EQ(seen.size(), 50u);

  auto lines = out.Lines();
  ASSERT_EQ(lines.size(), 3u);
  uint64_t rows = 0;
  for (const auto& l : lines) {
    EXPECT_EQ(l.rfind(R"({"message_id":"local:)", 0), 0u) << l;
    EXPECT_NE(l.find(R"("txn_id":null,"rows":)"), std::string::npos) << l;
    rows += std::stoull(l.substr(l.find(R"("rows":)") + 7));
  }
  EXPECT_EQ(rows, 50u);
  EXPECT_TRUE(err.Text().empty()) << err.Text();  // short: no progress line
}

TEST_F(InsertCommandTest, MessagesCarryAtMost1000Rows) {
  Create(2, 1);
  Capture out, err;
  ASSERT_EQ(RunInsert(InsertArgsFor(2500), out.file(), err.file()), kExitOk) << err.Text();
  auto batches = Batches();
  ASSERT_EQ(batches.size(), 1u);
  std::vector<int> sizes;
  for (const auto& b : batches.begin()->second) sizes.push_back(b.pks_size());
  std::sort(sizes.begin(), sizes.end());  // in flight together: acknowledged in any order
  EXPECT_EQ(sizes, (std::vector<int>{500, 1000, 1000}));
  const std::vector<std::string> lines = out.Lines();
  ASSERT_EQ(lines.size(), 3u);
  const std::string first = R"("rows":1000,"first_pk":")" + std::to_string(kFirstPk) +
                            R"(","last_pk":")" + std::to_string(kFirstPk + 999) +
                            R"(","pks":null})";
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                          [&](const std::string& l) { return l.find(first) != std::string::npos; }),
            1)
      << out.Text();
}

TEST_F(InsertCommandTest, MessagesCarryAboutOneMiB) {
  Create(32768, 1);  // 128 KiB + 8 bytes per row: 7 rows per message
  Capture out, err;
  ASSERT_EQ(RunInsert(InsertArgsFor(20), out.file(), err.file()), kExitOk) << err.Text();
  std::vector<int> sizes;
  const auto batches = Batches();  // (a temporary's element would dangle in the loop)
  for (const auto& b : batches.begin()->second) sizes.push_back(b.pks_size());
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<int>{6, 7, 7}));
}

TEST_F(InsertCommandTest, ProgressGoesToStderr) {
  Create(2, 1);
  Args a = InsertArgsFor(2500);
  a.insert.progress_interval = absl::ZeroDuration();  // every ack
  Capture out, err;
  ASSERT_EQ(RunInsert(a, out.file(), err.file()), kExitOk) << err.Text();
  // Messages of 1000, 1000 and 500 rows are acknowledged in any order: one line per ack, the
  // running count each time, ending at the total.
  const std::vector<std::string> lines = err.Lines();
  ASSERT_EQ(lines.size(), 3u) << err.Text();
  int previous = 0;
  for (const std::string& line : lines) {
    int acked = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "kfctl: insert: %d/2500 rows acknowledged", &acked), 1)
        << line;
    EXPECT_TRUE(acked - previous == 1000 || acked - previous == 500) << line;
    previous = acked;
  }
  EXPECT_EQ(previous, 2500);
}

TEST_F(InsertCommandTest, FileVectorsAreSentWithTheirRowsPk) {
  Create(2, 2);
  const std::vector<float> values = {0, 0.5f, 1, 1.5f, 2, 2.5f, 3, 3.5f, 4, 4.5f};
  for (const std::string& path : {WriteFile("rows.npy", testing::NpyF32(5, 2, values)),
                                  WriteFile("rows.csv", "0,0.5\n1,1.5\n2,2.5\n3,3.5\n4,4.5\n")}) {
    fake_.SetNextTimestamp(kFirstPk);
    const size_t before = node_.appended().size();
    Args a = InsertArgsFor(0);
    a.insert.rows.reset();
    a.insert.file = path;
    a.insert.partition = "p1";
    Capture out, err;
    ASSERT_EQ(RunInsert(a, out.file(), err.file()), kExitOk) << path << ": " << err.Text();
    size_t rows = 0;
    for (size_t i = before; i < node_.appended().size(); ++i) {
      auto b = DecodeInsertBatch(node_.appended()[i].payload());
      ASSERT_TRUE(b.ok());
      EXPECT_EQ(b->partition(), "p1");
      for (int k = 0; k < b->pks_size(); ++k) {
        const uint64_t row = static_cast<uint64_t>(b->pks(k)) - kFirstPk;  // pks in row order
        ASSERT_LT(row, 5u);
        EXPECT_EQ(b->vectors(2 * k), values[2 * row]) << path;
        EXPECT_EQ(b->vectors(2 * k + 1), values[2 * row + 1]) << path;
        ++rows;
      }
    }
    EXPECT_EQ(rows, 5u) << path;
  }
}

TEST_F(InsertCommandTest, FileDimMismatchIsAUsageErrorAndNothingIsSent) {
  Create(4, 1);
  Args a = InsertArgsFor(0);
  a.insert.rows.reset();
  a.insert.file = WriteFile("dim3.npy", testing::NpyF32(1, 3, {1, 2, 3}));
  Capture out, err;
  EXPECT_EQ(RunInsert(a, out.file(), err.file()), kExitUsage);
  EXPECT_EQ(err.Text(), "kfctl: INVALID_ARGUMENT: " + a.insert.file +
                            " has vectors of dim 3, collection 'orders' has dim 4; nothing was "
                            "sent\n");
  EXPECT_EQ(Methods(), (std::vector<std::string>{"CreateCollection", "DescribeCollection"}));
  EXPECT_TRUE(node_.produce_requests().empty());
}

TEST_F(InsertCommandTest, BadFileIsAUsageErrorBeforeConnecting) {
  Args a = InsertArgsFor(0);
  a.insert.rows.reset();
  a.insert.file = WriteFile("bad.csv", "1,2\n3\n");
  Capture out, err;
  EXPECT_EQ(RunInsert(a, out.file(), err.file()), kExitUsage);
  EXPECT_EQ(err.Text(), "kfctl: INVALID_ARGUMENT: " + a.insert.file +
                            ": .csv: line 2: 1 values, want 2 (the width of line 1)\n");
  EXPECT_TRUE(fake_.calls().empty());
}

TEST_F(InsertCommandTest, MissingCollectionIsAServerError) {
  Capture out, err;
  EXPECT_EQ(RunInsert(InsertArgsFor(1), out.file(), err.file()), kExitServerError);
  EXPECT_EQ(err.Text(), "kfctl: NOT_FOUND (COLLECTION_NOT_FOUND): collection 'orders' not found\n");
  EXPECT_TRUE(node_.produce_requests().empty());
}

TEST_F(InsertCommandTest, AllocateIdsFailureSendsNothing) {
  Create(2, 1);
  fake_.FailWith(StreamingError(StreamingCode::kOnShutdown, "not the coordinator"),
                 "AllocateTimestamps");
  Capture out, err;
  EXPECT_EQ(RunInsert(InsertArgsFor(3), out.file(), err.file()), kExitServerError);
  EXPECT_EQ(err.Text(), "kfctl: UNAVAILABLE (ON_SHUTDOWN): not the coordinator\n");
  EXPECT_TRUE(node_.produce_requests().empty());
}

// Every request for a message of `type` on `vchannel` ("" = any) fails with `code`.
void FailEvery(FakeStreamingNode* node, MessageType type, std::string vchannel,
               StreamingCode code) {
  node->SetErrorInjector([=](const v1::ProduceRequest& r) -> std::optional<v1::Error> {
    MutableMessage m = client::testing::SentMessage(r);
    if (m.type() != type || (!vchannel.empty() && m.vchannel() != vchannel)) {
      return std::nullopt;
    }
    return client::testing::MakeWireError(code, "injected");
  });
}

TEST_F(InsertCommandTest, AppendFailureStopsAndExitsOne) {
  Create(2, 1);
  FailEvery(&node_, MessageType::kInsert, "", StreamingCode::kCollectionNotFound);
  Capture out, err;
  EXPECT_EQ(RunInsert(InsertArgsFor(3000), out.file(), err.file()), kExitServerError);
  EXPECT_TRUE(out.Text().empty());
  EXPECT_EQ(err.Text(), "kfctl: NOT_FOUND (COLLECTION_NOT_FOUND): injected\n");
}

TEST_F(InsertCommandTest, TxnIsOneTransactionPerShard) {
  const auto info = Create(2, 3);
  Args a = InsertArgsFor(2100);
  a.insert.txn = true;
  Capture out, err;
  ASSERT_EQ(RunInsert(a, out.file(), err.file()), kExitOk) << err.Text();
  auto txns = node_.txns();
  ASSERT_EQ(txns.size(), 3u);
  std::map<std::string, int64_t> txn_of;
  size_t bodies = 0;
  for (const auto& [id, t] : txns) {
    EXPECT_EQ(t.phase, FakeStreamingNode::TxnPhase::kCommitted) << t.vchannel;
    EXPECT_TRUE(txn_of.emplace(t.vchannel, id).second) << "two txns on " << t.vchannel;
    bodies += t.bodies.size();
  }
  EXPECT_EQ(txn_of.size(), 3u);
  for (const auto& v : info.vchannels) EXPECT_TRUE(txn_of.contains(v)) << v;
  // ~700 rows per shard: one body each, except a shard that got more than 1000.
  EXPECT_GE(bodies, 3u);
  auto lines = out.Lines();
  ASSERT_EQ(lines.size(), bodies);
  // Lines come shard by shard (each after its commit), with the shard's txn id.
  size_t shard = 0;
  for (const auto& l : lines) {
    while (l.find(info.vchannels[shard]) == std::string::npos) ++shard;
    ASSERT_LT(shard, 3u) << l;
    EXPECT_NE(l.find(R"("txn_id":")" + std::to_string(txn_of[info.vchannels[shard]]) + "\""),
              std::string::npos)
        << l;
  }
}

TEST_F(InsertCommandTest, TxnBodyFailureRollsBackEveryShard) {
  Create(2, 2);
  FailEvery(&node_, MessageType::kInsert, "kf-dml_1_1v1", StreamingCode::kInvalidArgument);
  Args a = InsertArgsFor(40);
  a.insert.txn = true;
  Capture out, err;
  EXPECT_EQ(RunInsert(a, out.file(), err.file()), kExitServerError);
  EXPECT_TRUE(out.Text().empty());
  EXPECT_EQ(err.Text(), "kfctl: INVALID_ARGUMENT: injected\n");
  auto txns = node_.txns();
  ASSERT_EQ(txns.size(), 2u);
  for (const auto& [id, t] : txns) {
    EXPECT_EQ(t.phase, FakeStreamingNode::TxnPhase::kRolledBack) << t.vchannel;
  }
}

TEST_F(InsertCommandTest, TxnCommitFailureKeepsEarlierShardsAndRollsBackLaterOnes) {
  const auto info = Create(2, 3);
  FailEvery(&node_, MessageType::kCommitTxn, info.vchannels[1], StreamingCode::kTransactionExpired);
  Args a = InsertArgsFor(60);
  a.insert.txn = true;
  Capture out, err;
  EXPECT_EQ(RunInsert(a, out.file(), err.file()), kExitServerError);
  std::map<std::string, FakeStreamingNode::TxnPhase> phase;
  for (const auto& [id, t] : node_.txns()) phase[t.vchannel] = t.phase;
  EXPECT_EQ(phase[info.vchannels[0]], FakeStreamingNode::TxnPhase::kCommitted);
  EXPECT_EQ(phase[info.vchannels[2]], FakeStreamingNode::TxnPhase::kRolledBack);
  for (const auto& l : out.Lines()) {
    EXPECT_NE(l.find(info.vchannels[0]), std::string::npos) << "only shard 0 committed: " << l;
  }
  EXPECT_FALSE(out.Lines().empty());
  EXPECT_NE(err.Text().find("kfctl: ABORTED (TRANSACTION_EXPIRED): commit of shard 1 "
                            "(kf-dml_1_1v1) failed; the shards before it are committed"),
            std::string::npos)
      << err.Text();
}

TEST_F(InsertCommandTest, DeleteGroupsPksByShard) {
  const auto info = Create(2, 2);
  Args a;
  a.endpoint = node_.endpoint();
  a.del.collection = "orders";
  a.del.pks = {1, 2, 3, -1};  // shards of 2: 1 -> 0, 2 -> 1, 3 -> 0, -1 -> 1
  Capture out, err;
  ASSERT_EQ(RunDelete(a, out.file(), err.file()), kExitOk) << err.Text();
  auto lines = out.Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find(R"("vchannel":"kf-dml_0_1v0","txn_id":null,"rows":2,"first_pk":"1",)"
                          R"("last_pk":"3","pks":["1","3"]})"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find(R"("vchannel":"kf-dml_1_1v1","txn_id":null,"rows":2,"first_pk":"2",)"
                          R"("last_pk":"-1","pks":["2","-1"]})"),
            std::string::npos)
      << lines[1];
  auto appended = node_.appended();
  ASSERT_EQ(appended.size(), 2u);
  const MutableMessage& m = appended[0];
  EXPECT_EQ(m.type(), MessageType::kDelete);
  auto pks = DecodeDeletePks(m.payload());
  ASSERT_TRUE(pks.ok());
  EXPECT_EQ(std::vector<int64_t>(pks->pks().begin(), pks->pks().end()),
            (std::vector<int64_t>{1, 3}));
}

TEST_F(InsertCommandTest, DeleteFromAMissingCollectionIsAServerError) {
  Args a;
  a.endpoint = node_.endpoint();
  a.del.collection = "orders";
  a.del.pks = {1};
  Capture out, err;
  EXPECT_EQ(RunDelete(a, out.file(), err.file()), kExitServerError);
  EXPECT_EQ(err.Text(), "kfctl: NOT_FOUND (COLLECTION_NOT_FOUND): collection 'orders' not found\n");
  EXPECT_TRUE(node_.produce_requests().empty());
}

}  // namespace
}  // namespace kf::cli
