// End-to-end tests of kfctl's collection commands (issue 5) against the real `kingfisher run
// standalone`: collection create/describe/list/drop, insert (--rows, --file .npy, --txn) and
// delete, with the outputs parsed as JSON and read back with `kfctl consume`.

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kfctl_fixture.h"
#include "kingfisher/collections.h"
#include "nlohmann/json.hpp"

namespace kf::testing {
namespace {

class KfctlCollectionsTest : public KfctlServerTest {
 protected:
  // Creates `name` and returns its description (vchannels[i] is shard i's).
  nlohmann::json Create(const std::string& name, int dim, int shards) {
    auto r = Run({"collection", "create", name, "--dim", std::to_string(dim), "--shards",
                  std::to_string(shards)});
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(r.lines.size(), 1u) << Describe(r);
    return r.lines.empty() ? nlohmann::json() : r.lines[0];
  }
  // The messages of `vchannel` from the beginning up to `count` non-TimeTick ones.
  std::vector<nlohmann::json> Consume(const std::string& vchannel, size_t count) {
    auto r = Run({"consume", "--vchannel", vchannel, "--from", "earliest", "--limit",
                  std::to_string(count), "--idle-timeout", "20"});
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    return r.lines;
  }
};

// A NumPy v1.0 file of `rows` x `dim` little-endian float32 values.
std::string WriteNpy(const std::string& path, int rows, int dim) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(dim) + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  for (int i = 0; i < rows * dim; ++i) {
    float f = static_cast<float>(i) / 8;
    bytes.append(reinterpret_cast<const char*>(&f), sizeof(f));
  }
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST_F(KfctlCollectionsTest, CreateDescribeListInsertDeleteDrop) {
  const nlohmann::json c = Create("books", 4, 3);
  ASSERT_EQ(c["name"], "books");
  ASSERT_EQ(c["state"], "CREATED");
  ASSERT_EQ(c["vchannels"].size(), 3u) << c.dump();
  const std::vector<std::string> vchannels = c["vchannels"];

  auto described = Run({"collection", "describe", "books"});
  ASSERT_EQ(described.exit_code, 0) << Describe(described);
  EXPECT_EQ(described.lines.at(0), c);
  auto listed = Run({"collection", "list"});
  ASSERT_EQ(listed.exit_code, 0) << Describe(listed);
  EXPECT_EQ(listed.lines.at(0)["collections"], nlohmann::json::array({c}));

  // Every acknowledged row is on the vchannel of its shard, and each message is read back.
  auto inserted = Run({"insert", "books", "--rows", "24"});
  ASSERT_EQ(inserted.exit_code, 0) << Describe(inserted);
  std::map<std::string, std::set<std::string>> acked;  // vchannel -> message ids
  int rows = 0;
  for (const auto& j : inserted.lines) {
    const std::string v = j["vchannel"];
    acked[v].insert(j["message_id"].get<std::string>());
    rows += j["rows"].get<int>();
    ASSERT_TRUE(j["pks"].is_array()) << j.dump();
    for (const auto& pk : j["pks"]) {
      const uint32_t shard = kingfisher::ShardOfPk(std::stoll(pk.get<std::string>()), 3);
      EXPECT_EQ(vchannels[shard], v) << pk;
    }
  }
  EXPECT_EQ(rows, 24);
  for (const auto& [v, ids] : acked) {
    auto consumed = Consume(v, ids.size() + 1);  // + its CreateCollection
    ASSERT_EQ(consumed.size(), ids.size() + 1);
    EXPECT_EQ(consumed[0]["type"], "CreateCollection");
    for (size_t i = 1; i < consumed.size(); ++i) {
      EXPECT_EQ(consumed[i]["type"], "Insert");
      EXPECT_TRUE(ids.count(consumed[i]["message_id"].get<std::string>())) << consumed[i].dump();
    }
  }

  auto deleted = Run({"delete", "books", "--pks", "1,2,3"});
  ASSERT_EQ(deleted.exit_code, 0) << Describe(deleted);
  EXPECT_FALSE(deleted.lines.empty());

  auto dropped = Run({"collection", "drop", "books"});
  ASSERT_EQ(dropped.exit_code, 0) << Describe(dropped);
  auto after = Run({"insert", "books", "--rows", "1"});
  EXPECT_EQ(after.exit_code, 1) << Describe(after);
  EXPECT_NE(after.err.find("NOT_FOUND"), std::string::npos) << Describe(after);
  auto gone = Run({"collection", "describe", "books"});
  EXPECT_EQ(gone.exit_code, 1) << Describe(gone);
}

TEST_F(KfctlCollectionsTest, InsertFromAnNpyFileAndAsTransactions) {
  Create("vectors", 8, 2);
  const std::string npy = WriteNpy(work_dir() + "/v.npy", 10, 8);
  auto from_file = Run({"insert", "vectors", "--file", npy});
  ASSERT_EQ(from_file.exit_code, 0) << Describe(from_file);
  int rows = 0;
  for (const auto& j : from_file.lines) rows += j["rows"].get<int>();
  EXPECT_EQ(rows, 10);

  // A file of another dim is refused before anything is sent.
  const std::string wrong = WriteNpy(work_dir() + "/w.npy", 2, 4);
  auto mismatch = Run({"insert", "vectors", "--file", wrong});
  EXPECT_EQ(mismatch.exit_code, 2) << Describe(mismatch);
  EXPECT_TRUE(mismatch.lines.empty()) << Describe(mismatch);

  // --txn: each shard's rows are one transaction, consumed as one Txn message.
  auto txn = Run({"insert", "vectors", "--rows", "6", "--txn"});
  ASSERT_EQ(txn.exit_code, 0) << Describe(txn);
  std::set<std::string> txn_vchannels;
  for (const auto& j : txn.lines) {
    EXPECT_FALSE(j["txn_id"].is_null()) << j.dump();
    txn_vchannels.insert(j["vchannel"].get<std::string>());
  }
  for (const std::string& v : txn_vchannels) {
    size_t file_messages = 0;
    for (const auto& j : from_file.lines) file_messages += j["vchannel"] == v;
    auto consumed = Consume(v, 1 + file_messages + 1);  // Create, the file's, the Txn
    ASSERT_FALSE(consumed.empty());
    EXPECT_EQ(consumed.back()["type"], "Txn") << consumed.back().dump();
  }
}

TEST_F(KfctlCollectionsTest, BadInputIsRefusedAndChangesNothing) {
  Create("taken", 4, 1);
  auto duplicate = Run({"collection", "create", "taken", "--dim", "4"});
  EXPECT_EQ(duplicate.exit_code, 1) << Describe(duplicate);
  EXPECT_NE(duplicate.err.find("ALREADY_EXISTS"), std::string::npos) << Describe(duplicate);

  auto unknown = Run({"collection", "drop", "nosuch"});
  EXPECT_EQ(unknown.exit_code, 1) << Describe(unknown);
  EXPECT_NE(unknown.err.find("NOT_FOUND"), std::string::npos) << Describe(unknown);

  for (const std::vector<std::string>& args : {std::vector<std::string>{"--dim", "0"},
                                               {"--dim", "32769"},
                                               {"--dim", "4", "--shards", "0"},
                                               {"--dim", "4", "--shards", "65"},
                                               {"--dim", "4", "--metric", "HAMMING"},
                                               {}}) {
    std::vector<std::string> cmd = {"collection", "create", "refused"};
    cmd.insert(cmd.end(), args.begin(), args.end());
    auto r = Run(cmd);
    EXPECT_EQ(r.exit_code, 2) << Describe(r);
  }
  auto list = Run({"collection", "list"});
  ASSERT_EQ(list.exit_code, 0) << Describe(list);
  for (const auto& c : list.lines.at(0)["collections"]) EXPECT_NE(c["name"], "refused");
}

}  // namespace
}  // namespace kf::testing
