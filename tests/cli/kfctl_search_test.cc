// End-to-end tests of kfctl search and get (issue 28, docs/search.md) against the real
// `kingfisher run standalone`: every acknowledged row is found by `get` and by a strong search
// for its own vector exactly once, at once and after a kill -9 of the server; an acknowledged
// delete hides its row, also after the restart; bad input is refused with a clear error.

#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/testing/loopback.h"
#include "common/testing/wait_until.h"
#include "gtest/gtest.h"
#include "kfctl_fixture.h"
#include "kingfisher/client.h"
#include "kingfisher/collections.h"
#include "nlohmann/json.hpp"

namespace kf::testing {
namespace {

class KfctlSearchTest : public KfctlServerTest {
 protected:
  // The pks of every ack line of an insert.
  static std::vector<std::string> AckedPks(const KfctlResult& r) {
    std::vector<std::string> pks;
    for (const auto& line : r.lines) {
      for (const auto& pk : line["pks"]) pks.push_back(pk);
    }
    return pks;
  }
  static std::string Join(const std::vector<float>& v) {
    std::string out;
    for (float x : v) {
      if (!out.empty()) out += ',';
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(x));
      out += buf;
    }
    return out;
  }

  // Every pk of `vectors` is found by get (its own vector) and by a strong search for its
  // vector as the nearest hit, exactly once; every pk of `deleted` by neither.
  void ExpectSearchable(const std::map<std::string, std::vector<float>>& vectors,
                        const std::vector<std::string>& deleted) {
    for (const auto& [pk, v] : vectors) {
      auto got = Run({"get", "vecs", "--pks", pk, "--consistency", "strong"});
      ASSERT_EQ(got.exit_code, 0) << Describe(got);
      ASSERT_EQ(got.lines.size(), 1u) << pk << ": " << Describe(got);
      EXPECT_EQ(got.lines[0]["vector"].get<std::vector<float>>(), v) << pk;
      auto found =
          Run({"search", "vecs", "--vector", Join(v), "--topk", "5", "--consistency", "strong"});
      ASSERT_EQ(found.exit_code, 0) << Describe(found);
      ASSERT_EQ(found.lines.size(), 1u) << Describe(found);
      const auto& hits = found.lines[0]["hits"];
      ASSERT_FALSE(hits.empty()) << Describe(found);
      EXPECT_EQ(hits[0]["pk"], pk) << Describe(found);
      EXPECT_EQ(hits[0]["distance"], 0.0) << Describe(found);
      int seen = 0;
      for (const auto& h : hits) seen += h["pk"] == pk ? 1 : 0;
      EXPECT_EQ(seen, 1) << Describe(found);
    }
    for (const std::string& pk : deleted) {
      auto got = Run({"get", "vecs", "--pks", pk, "--consistency", "strong"});
      ASSERT_EQ(got.exit_code, 0) << Describe(got);
      EXPECT_TRUE(got.lines.empty()) << "deleted " << pk << " still visible: " << Describe(got);
    }
  }
};

TEST_F(KfctlSearchTest, AckedRowsAreSearchableAtOnceAndAfterAKill9) {
  auto created = Run({"collection", "create", "vecs", "--dim", "8", "--shards", "2"});
  ASSERT_EQ(created.exit_code, 0) << Describe(created);
  std::map<std::string, std::vector<float>> vectors;
  std::vector<std::string> pks;
  for (int batch = 0; batch < 3; ++batch) {  // small inserts: the ack lines list their pks
    auto inserted = Run({"insert", "vecs", "--rows", "6"});
    ASSERT_EQ(inserted.exit_code, 0) << Describe(inserted);
    for (const std::string& pk : AckedPks(inserted)) pks.push_back(pk);
  }
  ASSERT_EQ(pks.size(), 18u);
  for (const std::string& pk : pks) {
    auto got = Run({"get", "vecs", "--pks", pk, "--consistency", "strong"});
    ASSERT_EQ(got.exit_code, 0) << Describe(got);
    ASSERT_EQ(got.lines.size(), 1u) << pk << ": " << Describe(got);
    vectors[pk] = got.lines[0]["vector"].get<std::vector<float>>();
  }
  const std::vector<std::string> deleted = {pks[3], pks[11]};
  auto del = Run({"delete", "vecs", "--pks", deleted[0] + "," + deleted[1]});
  ASSERT_EQ(del.exit_code, 0) << Describe(del);
  for (const std::string& pk : deleted) vectors.erase(pk);
  ExpectSearchable(vectors, deleted);

  server().Kill();
  ASSERT_TRUE(server().Start()) << server().Output();
  ExpectSearchable(vectors, deleted);

  // kfctl flush (docs/recovery-storage.md): every shard's rows sealed and in the object store
  // under a committed checkpoint when it returns; a restart loads them from there (at open,
  // before any search) and answers the same.
  auto flushed = Run({"flush", "vecs"});
  ASSERT_EQ(flushed.exit_code, 0) << Describe(flushed);
  ASSERT_EQ(flushed.lines.size(), 1u) << Describe(flushed);
  const auto& shards = flushed.lines[0]["shards"];
  ASSERT_EQ(shards.size(), 2u) << Describe(flushed);
  std::map<std::string, uint64_t> flush_ts;
  for (const auto& s : shards) {
    // Timeticks are JSON strings: they exceed 2^53 (docs/semantics.md).
    const uint64_t flush = std::stoull(s["flush_timetick"].get<std::string>());
    EXPECT_GE(std::stoull(s["checkpoint_timetick"].get<std::string>()), flush) << Describe(flushed);
    flush_ts[s["vchannel"]] = flush;
  }
  // kfctl status shows each shard's segments flushed and its pchannel's checkpoint past the
  // flush.
  auto status = Run({"status"});
  ASSERT_EQ(status.exit_code, 0) << Describe(status);
  size_t shards_seen = 0;
  for (const auto& p : status.lines.at(0)["pchannels"]) {
    ASSERT_TRUE(p.contains("data")) << "the standalone serves " << p["pchannel"];
    for (const auto& s : p["data"]["shards"]) {
      auto it = flush_ts.find(s["vchannel"]);
      if (it == flush_ts.end()) continue;
      ++shards_seen;
      EXPECT_GE(std::stoull(p["data"]["checkpoint_timetick"].get<std::string>()), it->second)
          << p.dump();
      EXPECT_GE(s["flushed_segments"].get<uint64_t>(), 1u) << p.dump();
      EXPECT_EQ(s["flushed_segments"], s["sealed_segments"]) << p.dump();
      EXPECT_GT(p["data"]["wal_bytes"].get<uint64_t>(), 0u) << p.dump();
    }
  }
  EXPECT_EQ(shards_seen, 2u) << Describe(status);
  server().Kill();
  ASSERT_TRUE(server().Start()) << server().Output();
  // Loaded at open, in the background, without a search asking.
  EXPECT_TRUE(
      WaitUntil([&] { return MetricSum(server().http_port(), "kf_recovered_segments") >= 2; },
                absl::Seconds(30), absl::Milliseconds(100)))
      << server().Output();
  ExpectSearchable(vectors, deleted);
}

TEST_F(KfctlSearchTest, BadInputGetsAClearErrorAndChangesNothing) {
  auto created = Run({"collection", "create", "bad", "--dim", "4"});
  ASSERT_EQ(created.exit_code, 0) << Describe(created);
  auto inserted = Run({"insert", "bad", "--rows", "3"});
  ASSERT_EQ(inserted.exit_code, 0) << Describe(inserted);
  const std::string garbage = work_dir() + "/garbage.npy";
  std::ofstream(garbage) << "\x93NUMPY not really";
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"search", "bad", "--vector", "1,2,3"}, 1, "INVALID_ARGUMENT"},  // wrong dim
      {{"search", "bad", "--vector", "1,2,3,nan"}, 2, "not a finite number"},
      {{"search", "bad", "--vector", "1,2,3,inf"}, 2, "not a finite number"},
      {{"search", "bad", "--vector", "1,2,3,4", "--topk", "0"}, 2, "--topk"},
      {{"search", "bad", "--vector", "1,2,3,4", "--topk", "16385"}, 2, "--topk"},
      {{"search", "nope", "--vector", "1,2,3,4"}, 1, "COLLECTION_NOT_FOUND"},
      {{"search", "bad", "--vector", "1,2,3,4", "--partition", "zz"}, 1, "partition zz"},
      {{"search", "bad", "--file", garbage}, 2, "kfctl:"},
      {{"search", "bad", "--vector", "1,2,3,4", "--consistency", "sometimes"}, 2, "consistency"},
      {{"search", "bad"}, 2, "--vector"},
      {{"get", "bad", "--pks", "x"}, 2, "--pks"},
      {{"flush", "nope"}, 1, "COLLECTION_NOT_FOUND"},
      {{"flush", "bad", "extra"}, 2, "extra"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    auto r = Run(args);
    EXPECT_EQ(r.exit_code, c.exit_code) << Describe(r);
    EXPECT_NE(r.err.find(c.error), std::string::npos)
        << "want \"" << c.error << "\": " << Describe(r);
    EXPECT_TRUE(r.lines.empty()) << Describe(r);
  }
  // Nothing changed: the rows are all there.
  auto all =
      Run({"search", "bad", "--vector", "0,0,0,0", "--topk", "10", "--consistency", "strong"});
  ASSERT_EQ(all.exit_code, 0) << Describe(all);
  EXPECT_EQ(all.lines.at(0)["hits"].size(), 3u) << Describe(all);
  // A dropped collection is as unknown as one that never existed.
  ASSERT_EQ(Run({"collection", "drop", "bad"}).exit_code, 0);
  for (const char* verb : {"search", "get"}) {
    auto dropped = std::string(verb) == "search"
                       ? Run({"search", "bad", "--vector", "1,2,3,4", "--consistency", "strong"})
                       : Run({"get", "bad", "--pks", "1", "--consistency", "strong"});
    EXPECT_EQ(dropped.exit_code, 1) << Describe(dropped);
    EXPECT_NE(dropped.err.find("COLLECTION_NOT_FOUND"), std::string::npos) << Describe(dropped);
    EXPECT_TRUE(dropped.lines.empty()) << Describe(dropped);
  }
}

// Session consistency: a client reads its own acknowledged writes at once, at the timetick of
// its last write (no fresh timestamp); before its first write it reads as strong.
TEST_F(KfctlSearchTest, ASessionSearchSeesTheClientsOwnWritesAtOnce) {
  auto client = kingfisher::Client::Connect({.endpoint = server().address()});
  ASSERT_TRUE(client.ok()) << client.status();
  auto info = (*client)->CreateCollection({.name = "mine", .dim = 2, .shards = 2});
  ASSERT_TRUE(info.ok()) << info.status();
  auto producer = (*client)->CreateProducer();
  ASSERT_TRUE(producer.ok()) << producer.status();
  kingfisher::SearchOptions session;
  session.consistency = kingfisher::Consistency::kSession;
  session.topk = 1;
  auto before = (*client)->Search("mine", {0, 0}, session);  // no write yet: strong
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_TRUE(before->hits.at(0).empty());
  uint64_t last_ack = 0;
  for (int64_t pk = 1; pk <= 20; ++pk) {
    const std::vector<float> v = {static_cast<float>(pk), static_cast<float>(-pk)};
    auto msgs = kingfisher::InsertMessages(*info, {pk}, v);
    ASSERT_TRUE(msgs.ok()) << msgs.status();
    auto ack = (*producer)->AppendSync(std::move((*msgs)[0]));
    ASSERT_TRUE(ack.ok()) << ack.status();
    last_ack = std::max(last_ack, ack->timetick.value());
    auto found = (*client)->Search("mine", v, session);
    ASSERT_TRUE(found.ok()) << found.status();
    ASSERT_EQ(found->hits.at(0).size(), 1u) << pk;
    EXPECT_EQ(found->hits[0][0].pk, pk);
    EXPECT_EQ(found->timestamp.value(), last_ack);  // read at its own last write
    auto got = (*client)->Get("mine", {pk}, session);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->rows.size(), 1u) << pk;
  }
}

// The client caches a collection's description for its searches: a collection dropped and
// created again under the same name (new vchannels, another dim) is found again.
TEST_F(KfctlSearchTest, AClientSearchesACollectionCreatedAgainUnderItsName) {
  auto client = kingfisher::Client::Connect({.endpoint = server().address()});
  ASSERT_TRUE(client.ok()) << client.status();
  kingfisher::Client& c = **client;
  auto producer = c.CreateProducer();
  ASSERT_TRUE(producer.ok()) << producer.status();
  auto insert = [&](const kingfisher::CollectionInfo& info, std::vector<float> v) {
    auto msgs = kingfisher::InsertMessages(info, {42}, v);
    ASSERT_TRUE(msgs.ok()) << msgs.status();
    auto ack = (*producer)->AppendSync(std::move((*msgs)[0]));
    ASSERT_TRUE(ack.ok()) << ack.status();
  };
  kingfisher::SearchOptions strong;
  strong.consistency = kingfisher::Consistency::kStrong;

  auto first = c.CreateCollection({.name = "again", .dim = 2});
  ASSERT_TRUE(first.ok()) << first.status();
  insert(*first, {1, 2});
  auto hit = c.Search("again", {1, 2}, strong);
  ASSERT_TRUE(hit.ok()) << hit.status();
  ASSERT_EQ(hit->hits.at(0).size(), 1u);

  ASSERT_TRUE(c.DropCollection("again").ok());
  auto second = c.CreateCollection({.name = "again", .dim = 4});
  ASSERT_TRUE(second.ok()) << second.status();
  insert(*second, {1, 2, 3, 4});
  auto again = c.Search("again", {1, 2, 3, 4}, strong);  // the cached dim 2 would split it
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->hits.size(), 1u);
  ASSERT_EQ(again->hits[0].size(), 1u);
  EXPECT_EQ(again->hits[0][0].pk, 42);
  EXPECT_EQ(again->hits[0][0].distance, 0);
  auto wrong = c.Search("again", {1, 2}, strong);
  EXPECT_TRUE(absl::IsInvalidArgument(wrong.status())) << wrong.status();
  (*producer)->Close();
}

}  // namespace
}  // namespace kf::testing
