#include "wal/backends/objectstore/block_format.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "wal/backends/objectstore/block_fuzz_body.h"
#include "wal/backends/objectstore/compactor.h"
#include "wal/backends/objectstore/layout.h"

namespace kf::wal::objectstore {
namespace {

std::string DataBlock(uint64_t segment, uint64_t block, const std::vector<std::string>& entries) {
  BlockBuilder b;
  b.Begin(Term(7), segment, block);
  for (const auto& e : entries) b.Add(e);
  b.Finish();
  return b.bytes();
}

TEST(BlockFormatTest, DataBlocksRoundTripWithPackedIds) {
  const std::string bytes = DataBlock(3, 5, {"a", "", std::string(1000, 'z')});
  BlockHeader h;
  std::vector<std::pair<uint64_t, std::string>> got;
  ASSERT_TRUE(DecodeBlock(bytes, 3, 5, "k", &h, [&](uint64_t id, std::string_view e) {
                got.emplace_back(id, std::string(e));
              }).ok());
  EXPECT_EQ(h.kind, BlockKind::kData);
  EXPECT_EQ(h.term, Term(7));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].first, EntryOf(5, 0));
  EXPECT_EQ(got[2].first, EntryOf(5, 2));
  EXPECT_EQ(BlockOf(got[2].first), 5u);
  EXPECT_EQ(IndexOf(got[2].first), 2u);
  EXPECT_EQ(got[2].second, std::string(1000, 'z'));
}

TEST(BlockFormatTest, FenceBlocksAndPositionsAreChecked) {
  const std::string fence = EncodeFenceBlock(Term(9), 1, 2);
  EXPECT_EQ(fence.size(), kFenceBlockSize);
  BlockHeader h;
  auto none = [](uint64_t, std::string_view) { FAIL(); };
  ASSERT_TRUE(DecodeBlock(fence, 1, 2, "k", &h, none).ok());
  EXPECT_EQ(h.kind, BlockKind::kFence);
  EXPECT_EQ(h.term, Term(9));
  // The same bytes under another key are damage, not data.
  EXPECT_TRUE(absl::IsDataLoss(DecodeBlock(fence, 1, 3, "k", &h, none)));
  EXPECT_TRUE(absl::IsDataLoss(DecodeBlock(DataBlock(1, 2, {"x"}), 2, 2, "k", &h, none)));
}

TEST(BlockFormatTest, TruncationsAndBitFlipsAreDataLoss) {
  const std::string bytes = DataBlock(0, 1, {"hello", "world"});
  BlockHeader h;
  auto ignore = [](uint64_t, std::string_view) {};
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_TRUE(absl::IsDataLoss(DecodeBlock(bytes.substr(0, cut), 0, 1, "k", &h, ignore))) << cut;
  }
  for (size_t i = 0; i < bytes.size() * 8; ++i) {
    std::string bad = bytes;
    bad[i / 8] ^= static_cast<char>(1 << (i % 8));
    EXPECT_TRUE(absl::IsDataLoss(DecodeBlock(bad, 0, 1, "k", &h, ignore))) << i;
  }
}

TEST(BlockFormatTest, CompactedObjectsSplitIntoTheirBlocks) {
  const std::string a = DataBlock(1, 4, {"x"}), b = DataBlock(1, 5, {"yy", "zzz"});
  const std::string ab = a + b;  // the parts are views into it
  auto parts = SplitMerged(ab, 2, "m");
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ((*parts)[0], a);
  EXPECT_EQ((*parts)[1], b);
  EXPECT_TRUE(absl::IsDataLoss(SplitMerged(ab, 3, "m").status()));
  EXPECT_TRUE(absl::IsDataLoss(SplitMerged(a + b + "!", 2, "m").status()));
  EXPECT_TRUE(absl::IsDataLoss(SplitMerged((a + b).substr(0, a.size() + 10), 2, "m").status()));
}

TEST(BlockFormatTest, CompactionPlansRunsOfAtLeastTwoBlocksUpToTheTarget) {
  using Runs = std::vector<std::pair<uint64_t, uint64_t>>;
  auto plan = [](std::vector<uint64_t> sizes, uint64_t target) {
    Runs out;
    for (const MergedRun& r : PlanCompaction(sizes, target)) out.emplace_back(r.first, r.end);
    return out;
  };
  EXPECT_EQ(plan({10, 10, 10, 10}, 100), (Runs{{0, 4}}));
  EXPECT_EQ(plan({10, 10, 10, 10}, 20), (Runs{{0, 2}, {2, 4}}));
  EXPECT_EQ(plan({10, 50, 10, 10}, 20), (Runs{{2, 4}}));  // a big block stays alone
  EXPECT_EQ(plan({10}, 100), Runs{});
}

TEST(BlockFuzz, SeedsAndMutationsKeepTheInvariants) {
  std::mt19937 rng(42);
  const std::vector<std::string> seeds = {DataBlock(0, 0, {"a", "bc"}), DataBlock(2, 9, {""}),
                                          EncodeFenceBlock(Term(3), 4, 5), "", std::string(40, 0)};
  for (const std::string& seed : seeds) {
    RunBlockFuzzInput(seed);
    for (int i = 0; i < 2000; ++i) {
      std::string m = seed;
      if (!m.empty()) m[rng() % m.size()] = static_cast<char>(rng());
      if (rng() % 4 == 0 && !m.empty()) m.resize(rng() % m.size());
      RunBlockFuzzInput(m);
    }
  }
}

}  // namespace
}  // namespace kf::wal::objectstore
