#include "message/vchannel_name.h"

#include <gtest/gtest.h>

#include "common/errors.h"

namespace kf {
namespace {

TEST(VChannelTest, PChannelOfVChannel) {
  EXPECT_EQ(*PChannelOfVChannel("kf-dml_0_orders"), "kf-dml_0");
  EXPECT_EQ(*PChannelOfVChannel("kf-dml_12_7v3"), "kf-dml_12");
  EXPECT_EQ(*PChannelOfVChannel("my_cluster-dml_3_x"), "my_cluster-dml_3");
  EXPECT_EQ(*PChannelOfVChannel("kf-dml_0_a_b"), "kf-dml_0");
  // Greedy like the regex ^(.+-dml_\d+)_ : the last marker that fits wins.
  EXPECT_EQ(*PChannelOfVChannel("a-dml_1_b-dml_2_c"), "a-dml_1_b-dml_2");
  EXPECT_EQ(*PChannelOfVChannel("a-dml_1_b-dml_x"), "a-dml_1");
  for (const char* bad : {"", "kf", "kf-dml_0", "kf-dml_0_", "kf-dml_x_a", "kf-dml__a", "-dml_0_a",
                          "kf-dml_0x_a", "kf_dml_0_a"}) {
    auto r = PChannelOfVChannel(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(VChannelTest, IsCollectionVChannel) {
  EXPECT_TRUE(IsCollectionVChannel("kf-dml_0_7v0"));
  EXPECT_TRUE(IsCollectionVChannel("kf-dml_15_4500123v63"));
  for (const char* no : {"kf-dml_0_orders", "kf-dml_0_7v", "kf-dml_0_v0", "kf-dml_0_7v0x",
                         "kf-dml_0_7x0", "kf-dml_0_7v0v1", "kf-dml_0", "7v0", ""}) {
    EXPECT_FALSE(IsCollectionVChannel(no)) << no;
  }
}

TEST(VChannelTest, ParseVChannelClassifies) {
  using VC = CollectionVChannel;
  EXPECT_EQ(**ParseVChannel("kf-dml_0_42v1"), (VC{.collection_id = 42, .shard = 1}));
  EXPECT_EQ(**ParseVChannel("a-dml_1_b-dml_2_7v0"), (VC{.collection_id = 7, .shard = 0}));
  EXPECT_EQ(**ParseVChannel("kf-dml_3_9223372036854775807v63"),
            (VC{.collection_id = INT64_MAX, .shard = 63}));
  // Raw: any suffix that is not <digits>v<digits>.
  for (const char* raw : {"kf-dml_0_orders", "kf-dml_0_x", "kf-dml_0_7v", "kf-dml_0_v0",
                          "kf-dml_0_7v0x", "kf-dml_0_7v0v1", "kf-dml_0_-7v0", "kf-dml_0_+7v0",
                          "kf-dml_0_7V0", "kf-dml_0_7v0_load", "kf-dml_0_100"}) {
    auto r = ParseVChannel(raw);
    ASSERT_TRUE(r.ok()) << raw << ": " << r.status();
    EXPECT_FALSE(r->has_value()) << raw;
  }
}

TEST(VChannelTest, ParseVChannelRejectsNonCanonicalCollectionNames) {
  for (const char* bad :
       {"kf-dml_0_042v1", "kf-dml_0_42v01", "kf-dml_0_0v0", "kf-dml_0_00v0", "kf-dml_0_7v64",
        "kf-dml_0_7v4294967296", "kf-dml_0_9223372036854775808v0",
        "kf-dml_0_99999999999999999999v0", "kf-dml_0", "kf-dml_0_", "7v0", ""}) {
    auto r = ParseVChannel(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(GetStreamingCode(r.status()), StreamingCode::kInvalidArgument) << bad;
    EXPECT_FALSE(IsCollectionVChannel(bad)) << bad;
  }
}

}  // namespace
}  // namespace kf
