// kfctl collection create / drop / describe / list against FakeCollections: output lines, exit
// codes and the error line.
#include <string>
#include <vector>

#include "cli/capture_testing.h"
#include "cli/commands.h"
#include "client/fake_collections.h"
#include "client/fake_streaming_node.h"
#include "common/errors.h"
#include "gtest/gtest.h"

namespace kf::cli {
namespace {

using client::testing::FakeCollections;
using client::testing::FakeStreamingNode;
using testing::Capture;

class CollectionCommandsTest : public ::testing::Test {
 protected:
  CollectionCommandsTest() : node_("127.0.0.1:0", fake_.services()) {}

  Args CollectionArgsFor(std::string name) {
    Args a;
    a.endpoint = node_.endpoint();
    a.collection.name = std::move(name);
    a.collection.dim = 4;
    a.collection.shards = 2;
    a.collection.metric = "ip";
    return a;
  }

  FakeCollections fake_;
  FakeStreamingNode node_;
};

TEST_F(CollectionCommandsTest, CreatePrintsTheCollection) {
  Capture out, err;
  EXPECT_EQ(RunCollectionCreate(CollectionArgsFor("orders"), out.file(), err.file()), kExitOk)
      << err.Text();
  EXPECT_EQ(out.Lines(),
            std::vector<std::string>{
                R"({"id":1,"database":"default","name":"orders","dim":4,"metric":"IP","shards":2,)"
                R"("vchannels":["kf-dml_0_1v0","kf-dml_1_1v1"],"state":"CREATED",)"
                R"("partitions":[{"name":"_default","state":"CREATED"}],)"
                R"("create_time_ms":1700000000001})"});
  EXPECT_TRUE(err.Text().empty());
  auto calls = fake_.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].create.metric(), kingfisher::v1::IP);
  EXPECT_EQ(calls[0].create.shards(), 2u);
}

TEST_F(CollectionCommandsTest, CreateExistingIsAServerError) {
  Capture out1, err1, out2, err2;
  ASSERT_EQ(RunCollectionCreate(CollectionArgsFor("orders"), out1.file(), err1.file()), kExitOk);
  EXPECT_EQ(RunCollectionCreate(CollectionArgsFor("orders"), out2.file(), err2.file()),
            kExitServerError);
  EXPECT_TRUE(out2.Text().empty());
  EXPECT_EQ(err2.Text(), "kfctl: ALREADY_EXISTS (COLLECTION_EXISTS): collection 'orders' exists\n");
}

TEST_F(CollectionCommandsTest, DescribeListDrop) {
  Capture c1, c2, e;
  ASSERT_EQ(RunCollectionCreate(CollectionArgsFor("orders"), c1.file(), e.file()), kExitOk);
  ASSERT_EQ(RunCollectionCreate(CollectionArgsFor("users"), c2.file(), e.file()), kExitOk);
  const std::string orders = c1.Lines().at(0);
  const std::string users = c2.Lines().at(0);
  {
    Capture out, err;
    EXPECT_EQ(RunCollectionDescribe(CollectionArgsFor("orders"), out.file(), err.file()), kExitOk);
    EXPECT_EQ(out.Lines(), std::vector<std::string>{orders});
  }
  {
    Capture out, err;
    EXPECT_EQ(RunCollectionList(CollectionArgsFor(""), out.file(), err.file()), kExitOk);
    EXPECT_EQ(out.Lines(),
              std::vector<std::string>{R"({"collections":[)" + orders + "," + users + "]}"});
  }
  {
    Capture out, err;
    EXPECT_EQ(RunCollectionDrop(CollectionArgsFor("orders"), out.file(), err.file()), kExitOk);
    EXPECT_TRUE(out.Text().empty());  // like produce --rollback: success prints nothing
  }
  {
    Capture out, err;
    EXPECT_EQ(RunCollectionDescribe(CollectionArgsFor("orders"), out.file(), err.file()),
              kExitServerError);
    EXPECT_EQ(err.Text(),
              "kfctl: NOT_FOUND (COLLECTION_NOT_FOUND): collection 'orders' not found\n");
  }
  {
    Capture out, err;
    EXPECT_EQ(RunCollectionDrop(CollectionArgsFor("orders"), out.file(), err.file()),
              kExitServerError);
    EXPECT_EQ(err.Text(),
              "kfctl: NOT_FOUND (COLLECTION_NOT_FOUND): collection 'orders' not found\n");
  }
  {
    Capture out, err;
    EXPECT_EQ(RunCollectionList(CollectionArgsFor(""), out.file(), err.file()), kExitOk);
    EXPECT_EQ(out.Lines(), std::vector<std::string>{R"({"collections":[)" + users + "]}"});
  }
}

TEST_F(CollectionCommandsTest, LockedCollectionIsAbortedResourceAcquired) {
  fake_.FailWith(StreamingError(StreamingCode::kResourceAcquired, "orders is locked"));
  Capture out, err;
  EXPECT_EQ(RunCollectionDrop(CollectionArgsFor("orders"), out.file(), err.file()),
            kExitServerError);
  EXPECT_EQ(err.Text(), "kfctl: ABORTED (RESOURCE_ACQUIRED): orders is locked\n");
}

TEST(CollectionCommandsUnreachableTest, UnreachableEndpointIsUnavailable) {
  Args a;
  a.endpoint = "127.0.0.1:1";  // nothing listens on port 1
  a.timeout_seconds = 0.2;
  Capture out, err;
  EXPECT_EQ(RunCollectionList(a, out.file(), err.file()), kExitServerError);
  EXPECT_EQ(err.Text().rfind("kfctl: UNAVAILABLE (TRANSPORT): ListCollections: endpoint "
                             "127.0.0.1:1 unreachable, nothing was sent",
                             0),
            0u)
      << err.Text();
}

}  // namespace
}  // namespace kf::cli
