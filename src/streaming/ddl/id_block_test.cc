#include "streaming/ddl/id_block.h"

#include <gtest/gtest.h>

#include "streaming/ddl/testing/ddl_test_util.h"

namespace kf::streaming::ddl {
namespace {

using IdBlockTest = testing::DdlTest;

TEST_F(IdBlockTest, IncreasesWithinABlockAndAcrossCoordinators) {
  const std::string key = keys_.root() + "test/counter";
  {
    FencedStore fenced(faulty_.get(), keys_.coord(), revision_);
    IdBlock ids(&fenced, key, 4);
    for (uint64_t want = 1; want <= 6; ++want) EXPECT_EQ(*ids.Next(Deadline()), want);
  }                          // ids 7 and 8 were reserved and are never handed out
  revision_ = TakeOffice();  // the next coordinator
  FencedStore fenced(faulty_.get(), keys_.coord(), revision_);
  IdBlock ids(&fenced, key, 4);
  EXPECT_EQ(*ids.Next(Deadline()), 9u);
}

TEST_F(IdBlockTest, AFailedReservationHandsOutNothing) {
  FencedStore fenced(faulty_.get(), keys_.coord(), revision_);
  IdBlock ids(&fenced, keys_.root() + "test/counter", 2);
  faulty_->SetDown(true);
  EXPECT_FALSE(ids.Next(Deadline()).ok());
  faulty_->SetDown(false);
  EXPECT_EQ(*ids.Next(Deadline()), 1u);
  EXPECT_EQ(*ids.Next(Deadline()), 2u);
  FencedStore deposed(faulty_.get(), keys_.coord(), revision_ - 1);
  IdBlock stale(&deposed, keys_.root() + "test/counter", 2);
  EXPECT_EQ(stale.Next(Deadline()).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace kf::streaming::ddl
