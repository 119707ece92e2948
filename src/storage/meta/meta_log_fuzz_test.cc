// Runs the metadata store's file fuzz body over valid logs, snapshots and records and
// deterministic mutations of them, so CI checks the parsers' invariants without libFuzzer.
#include <string>
#include <vector>

#include "common/testing/seed_mutations.h"
#include "gtest/gtest.h"
#include "storage/meta/kv_state.h"
#include "storage/meta/meta_log.h"
#include "storage/meta/meta_log_fuzz_body.h"

namespace kf::meta {
namespace {

std::vector<Mutation> History() {
  Mutation grant{.kind = Mutation::Kind::kLeaseGrant, .lease = 1, .ttl_ms = 5000};
  Mutation put{.kind = Mutation::Kind::kWrite,
               .revision = 2,
               .writes = {{.key = "a", .value = "1", .lease = 1}, {.key = "b", .value = "2"}}};
  Mutation del{
      .kind = Mutation::Kind::kWrite, .revision = 3, .writes = {{.is_delete = true, .key = "b"}}};
  Mutation revoke{.kind = Mutation::Kind::kLeaseRevoke,
                  .revision = 4,
                  .writes = {{.is_delete = true, .key = "a"}},
                  .lease = 1};
  return {grant, put, del, revoke};
}

std::vector<std::string> Seeds() {
  std::string log = EncodeLogHeader(3);
  for (const Mutation& m : History()) log += EncodeLogRecord(EncodeMutation(m));
  Snapshot snapshot{.log_seq = 4, .revision = 9, .next_lease_id = 3};
  snapshot.leases[2].ttl_ms = 1000;
  snapshot.kvs.push_back({.key = "k",
                          .value = std::string("\0\xff", 2),
                          .create_revision = 5,
                          .mod_revision = 9,
                          .version = 2,
                          .lease = 2});
  snapshot.kvs.push_back({.key = "z", .value = "", .create_revision = 8, .mod_revision = 8});
  const std::string sealed_snapshot = EncodeSnapshot(snapshot);
  return {log, log.substr(0, log.size() - 3),  // a torn tail
          log + std::string(40, '\0'),         // zero fill after the tail
          EncodeLogHeader(1),                  // an empty log
          sealed_snapshot,
          // The body seals its input again: without its checksum the snapshot decodes there.
          sealed_snapshot.substr(0, sealed_snapshot.size() - 4), EncodeMutation(History()[0]),
          EncodeMutation(History()[1]), EncodeMutation(History()[3]), "", std::string(16, '\0')};
}

TEST(MetaLogFuzzTest, SeedsKeepTheInvariants) {
  // The seeds are what they claim: the log replays whole, the snapshot decodes.
  absl::StatusOr<ParsedLog> log = ParseMetaLog(Seeds()[0]);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(log->mutations.size(), History().size());
  KvState state(64);
  for (const Mutation& m : log->mutations) ASSERT_TRUE(state.Apply(m).ok());
  ASSERT_TRUE(DecodeSnapshot(Seeds()[4]).ok());
  for (const std::string& s : Seeds()) RunMetaLogFuzzInput(s);
}

// What the fuzz target found: counters at INT64_MAX in a log or a snapshot are DATA_LOSS, not
// an overflow, and a refused write changes nothing.
TEST(MetaLogFuzzTest, CountersAtTheirLimitAreDataLoss) {
  KvState state(64);
  EXPECT_TRUE(absl::IsDataLoss(
      state.Apply({.kind = Mutation::Kind::kLeaseGrant, .lease = kMaxCounter, .ttl_ms = 1000})));

  Snapshot at_limit{.log_seq = 1, .revision = kMaxCounter};
  EXPECT_TRUE(absl::IsDataLoss(DecodeSnapshot(EncodeSnapshot(at_limit)).status()));
  at_limit.revision = 5;
  at_limit.kvs.push_back(
      {.key = "k", .create_revision = 1, .mod_revision = 5, .version = kMaxCounter});
  EXPECT_TRUE(absl::IsDataLoss(DecodeSnapshot(EncodeSnapshot(at_limit)).status()));

  state.Restore(kMaxCounter, 1, {}, {});
  EXPECT_TRUE(absl::IsDataLoss(
      state.Apply({.kind = Mutation::Kind::kWrite, .revision = 0, .writes = {{.key = "a"}}})));
  state.Restore(5, 1, {}, at_limit.kvs);
  EXPECT_TRUE(absl::IsDataLoss(state.Apply(
      {.kind = Mutation::Kind::kWrite, .revision = 6, .writes = {{.key = "b"}, {.key = "k"}}})));
  EXPECT_EQ(state.revision(), 5);
  EXPECT_EQ(state.Find("b"), nullptr);
}

TEST(MetaLogFuzzTest, DeterministicMutations) {
  kf::testing::ForEachMutation(Seeds(), /*rng_seed=*/20261206, 20000, /*alphabet=*/"",
                               [](const std::string& s) { RunMetaLogFuzzInput(s); });
}

}  // namespace
}  // namespace kf::meta
