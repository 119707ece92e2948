#include "message/replicate_config.h"

#include <gtest/gtest.h>

#include <string>

#include "common/errors.h"

namespace kf {
namespace {

using kingfisher::v1::ReplicateConfiguration;

// Clusters "a" (primary) -> "b", "c", each with pchannels <id>-p0, <id>-p1.
ReplicateConfiguration Star() {
  ReplicateConfiguration c;
  for (const char* id : {"a", "b", "c"}) {
    kingfisher::v1::ReplicateCluster* cluster = c.add_clusters();
    cluster->set_cluster_id(id);
    cluster->set_endpoint(std::string(id) + ":19530");
    cluster->add_pchannels(std::string(id) + "-p0");
    cluster->add_pchannels(std::string(id) + "-p1");
  }
  for (const char* target : {"b", "c"}) {
    kingfisher::v1::ReplicateTopologyEdge* e = c.add_topology();
    e->set_source_cluster_id("a");
    e->set_target_cluster_id(target);
  }
  return c;
}

void ExpectInvalid(const ReplicateConfiguration& c, const std::string& needle) {
  absl::Status s = ValidateReplicateConfig(c);
  EXPECT_EQ(GetStreamingCode(s), StreamingCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

TEST(ReplicateConfigTest, AStarAndTheEmptyConfigurationAreValid) {
  EXPECT_TRUE(ValidateReplicateConfig(Star()).ok());
  EXPECT_TRUE(ValidateReplicateConfig(ReplicateConfiguration()).ok());
  ReplicateConfiguration alone = Star();
  alone.mutable_clusters()->DeleteSubrange(1, 2);
  alone.clear_topology();
  EXPECT_TRUE(ValidateReplicateConfig(alone).ok());
}

TEST(ReplicateConfigTest, EveryMalformedTopologyIsRefusedNamingWhatIsWrong) {
  ReplicateConfiguration c = Star();
  c.mutable_clusters(1)->add_pchannels("b-p2");
  ExpectInvalid(c, "cluster b has 3 pchannels and the first cluster 2");

  c = Star();
  c.mutable_clusters(2)->set_cluster_id("b");
  ExpectInvalid(c, "cluster b twice");

  c = Star();
  c.mutable_topology(1)->set_target_cluster_id("z");
  ExpectInvalid(c, "a -> z names an unknown cluster");

  c = Star();
  c.mutable_topology(1)->set_target_cluster_id("a");
  ExpectInvalid(c, "cannot replicate to itself");

  c = Star();  // b -> a as well: a cycle
  kingfisher::v1::ReplicateTopologyEdge* back = c.add_topology();
  back->set_source_cluster_id("b");
  back->set_target_cluster_id("a");
  ExpectInvalid(c, "both sources");

  c = Star();
  c.mutable_topology()->RemoveLast();
  ExpectInvalid(c, "cluster c is neither the primary nor a secondary");

  c = Star();
  c.clear_topology();
  ExpectInvalid(c, "no edge");

  c = Star();
  c.mutable_clusters(0)->set_endpoint("");
  ExpectInvalid(c, "cluster a has no endpoint");

  c = Star();
  c.mutable_clusters(0)->set_pchannels(1, "a-p0");
  ExpectInvalid(c, "names pchannel a-p0 twice");

  c = Star();
  *c.add_topology() = c.topology(0);
  ExpectInvalid(c, "a -> b twice");
}

TEST(ReplicateConfigTest, RolesAndPChannelsByIndex) {
  const ReplicateConfiguration c = Star();
  const ReplicateRole a = RoleOf(c, "a");
  EXPECT_EQ(a.kind, ReplicateRole::Kind::kPrimary);
  EXPECT_EQ(a.secondaries, 2u);
  const ReplicateRole b = RoleOf(c, "b");
  EXPECT_EQ(b.kind, ReplicateRole::Kind::kSecondary);
  EXPECT_EQ(b.primary_id, "a");
  EXPECT_EQ(b.primary_endpoint, "a:19530");
  EXPECT_EQ(RoleOf(c, "x").kind, ReplicateRole::Kind::kNone);
  EXPECT_EQ(RoleOf(c, "").kind, ReplicateRole::Kind::kNone);
  EXPECT_EQ(ClusterOfPChannel(c, "b-p1"), "b");
  EXPECT_EQ(ClusterOfPChannel(c, "z-p1"), std::nullopt);
  EXPECT_EQ(PeerPChannel(c, "a", "a-p1", "c"), "c-p1");
  EXPECT_EQ(PeerPChannel(c, "a", "nope", "c"), std::nullopt);
  EXPECT_EQ(PeerPChannel(c, "a", "a-p0", "z"), std::nullopt);
}

}  // namespace
}  // namespace kf
