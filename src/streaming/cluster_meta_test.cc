#include "streaming/cluster_meta.h"

#include "gtest/gtest.h"

namespace kf::streaming {
namespace {

using kingfisher::v1::NodeInfo;
using kingfisher::v1::PChannelAssignment;

TEST(ClusterKeysTest, LayoutUnderTheClusterRoot) {
  ClusterKeys keys("prod");
  EXPECT_EQ(keys.coord(), "kf/prod/coord");
  EXPECT_EQ(keys.tso(), "kf/prod/tso");
  EXPECT_EQ(keys.node(7), "kf/prod/nodes/7");
  EXPECT_EQ(keys.pchannel("prod-dml_3"), "kf/prod/pchannels/prod-dml_3");
  EXPECT_EQ(keys.NodeIdOf("kf/prod/nodes/7"), 7);
  EXPECT_EQ(keys.PChannelOf("kf/prod/pchannels/prod-dml_3"), "prod-dml_3");
}

TEST(ClusterKeysTest, ForeignKeysAreNotOurs) {
  ClusterKeys keys("prod");
  EXPECT_EQ(keys.NodeIdOf("kf/other/nodes/7"), std::nullopt);
  EXPECT_EQ(keys.NodeIdOf("kf/prod/nodes/x"), std::nullopt);
  EXPECT_EQ(keys.NodeIdOf("kf/prod/nodes/0"), std::nullopt);
  EXPECT_EQ(keys.NodeIdOf("kf/prod/nodes/"), std::nullopt);
  EXPECT_EQ(keys.PChannelOf("kf/prod/pchannels/"), std::nullopt);
  EXPECT_EQ(keys.PChannelOf("kf/prod/nodes/1"), std::nullopt);
}

TEST(ClusterMetaTest, AssignmentRoundTrips) {
  ClusterKeys keys("kf");
  PChannelAssignment a;
  a.set_pchannel("kf-dml_0");
  a.set_node(2);
  a.set_term(5);
  a.set_state(kingfisher::v1::PCHANNEL_ASSIGNED);
  auto parsed = ParseAssignment(keys, keys.pchannel("kf-dml_0"), a.SerializeAsString());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->term(), 5);
  EXPECT_EQ(PChannelStateName(parsed->state()), "ASSIGNED");
}

TEST(ClusterMetaTest, CorruptOrMisplacedValuesAreDataLoss) {
  ClusterKeys keys("kf");
  auto garbage = ParseAssignment(keys, keys.pchannel("kf-dml_0"), "\xff\xff\xff");
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(garbage.status().message().find("kf/kf/pchannels/kf-dml_0"), std::string::npos);

  PChannelAssignment other;
  other.set_pchannel("kf-dml_1");
  EXPECT_EQ(
      ParseAssignment(keys, keys.pchannel("kf-dml_0"), other.SerializeAsString()).status().code(),
      absl::StatusCode::kDataLoss);

  NodeInfo n;
  n.set_id(3);
  EXPECT_TRUE(ParseNodeInfo(keys, keys.node(3), n.SerializeAsString()).ok());
  EXPECT_EQ(ParseNodeInfo(keys, keys.node(4), n.SerializeAsString()).status().code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace kf::streaming
