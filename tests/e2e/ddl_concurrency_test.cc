// DDL concurrency acceptance (issue 5), over a real standalone server and the client library:
//   - the same name, created and dropped by many threads at once: DDL on one name is
//     serialised — the collections that name had never overlap in the log (each one's
//     CreateCollection..DropCollection interval, by timetick, ends before the next begins),
//     and every acknowledged create/drop is exactly one collection's;
//   - different names, each driven by its own thread with no_wait: never RESOURCE_ACQUIRED, so
//     no DDL waited for one on another name.
#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/errors.h"
#include "gtest/gtest.h"
#include "kingfisher/client.h"
#include "kingfisher/consumer.h"
#include "server_process.h"

namespace kf {
namespace {

using testing::ServerProcess;
using testing::TempDir;

constexpr int kThreads = 6;
constexpr int kRounds = 5;
constexpr uint32_t kDim = 8;

std::unique_ptr<kingfisher::Client> Connect(const ServerProcess& server) {
  auto client = kingfisher::Client::Connect({.endpoint = server.address()});
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

// The timeticks of the CreateCollection and DropCollection on `vchannel` (0: absent).
std::pair<uint64_t, uint64_t> Lifetime(kingfisher::Client& client, const std::string& vchannel) {
  auto consumer =
      client.CreateConsumer({.vchannel = vchannel, .policy = kingfisher::DeliverPolicy::All()});
  EXPECT_TRUE(consumer.ok()) << consumer.status();
  if (!consumer.ok()) return {0, 0};
  uint64_t created = 0;
  for (;;) {
    auto m = (*consumer)->Next(kingfisher::Clock::now() + std::chrono::seconds(10));
    if (!m.ok()) {
      ADD_FAILURE() << vchannel << ": " << m.status();
      return {created, 0};
    }
    if (m->type == kingfisher::MessageType::kCreateCollection) created = m->timetick.value();
    if (m->type == kingfisher::MessageType::kDropCollection) return {created, m->timetick.value()};
  }
}

TEST(DdlConcurrencyE2E, SameNameIsSerialisedDifferentNamesDoNotWait) {
  TempDir dir;
  ServerProcess server({.data_dir = dir.path() + "/data"});
  ASSERT_TRUE(server.Start()) << server.Output();
  auto client = Connect(server);
  ASSERT_NE(client, nullptr);

  absl::Mutex mu;
  std::vector<kingfisher::CollectionInfo> created;  // acknowledged creates of "shared"
  int drops = 0;                                    // acknowledged drops of "shared"
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    // Half the threads race on one name; the others each own a name and use no_wait.
    threads.emplace_back([&, t] {
      const bool shared = t % 2 == 0;
      const std::string name = shared ? "shared" : absl::StrCat("own_", t);
      kingfisher::DdlOptions ddl;
      ddl.no_wait = !shared;
      for (int r = 0; r < kRounds; ++r) {
        auto c = client->CreateCollection({.name = name, .dim = kDim, .shards = 2}, ddl);
        absl::Status d = client->DropCollection(name, ddl);
        absl::MutexLock l(&mu);
        if (shared) {
          if (c.ok()) created.push_back(*c);
          if (d.ok()) ++drops;
          if (!c.ok() && !absl::IsAlreadyExists(c.status())) {
            errors.push_back(absl::StrCat("create shared: ", c.status().ToString()));
          }
          if (!d.ok() && !absl::IsNotFound(d)) {
            errors.push_back(absl::StrCat("drop shared: ", d.ToString()));
          }
        } else {
          if (!c.ok()) errors.push_back(absl::StrCat("create ", name, ": ", c.status().ToString()));
          if (!d.ok()) errors.push_back(absl::StrCat("drop ", name, ": ", d.ToString()));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) ADD_FAILURE() << e;
  ASSERT_FALSE(created.empty());

  // "shared" is gone and every acknowledged create made its own collection.
  auto last = client->DescribeCollection("shared");
  ASSERT_TRUE(absl::IsNotFound(last.status())) << last.status();
  std::map<int64_t, int> ids;
  for (const auto& c : created) ++ids[c.id];
  EXPECT_EQ(ids.size(), created.size()) << "an id was acknowledged twice";
  EXPECT_EQ(drops, static_cast<int>(created.size()));

  // Serialised: the lifetimes (by timetick, one oracle for every pchannel) never overlap.
  std::vector<std::pair<uint64_t, uint64_t>> lifetimes;
  for (const auto& c : created) {
    ASSERT_EQ(c.vchannels.size(), 2u);
    std::pair<uint64_t, uint64_t> life = {UINT64_MAX, 0};
    for (const auto& v : c.vchannels) {
      auto [born, died] = Lifetime(*client, v);
      ASSERT_GT(born, 0u) << v;
      ASSERT_GT(died, born) << v;
      life = {std::min(life.first, born), std::max(life.second, died)};
    }
    lifetimes.push_back(life);
  }
  std::sort(lifetimes.begin(), lifetimes.end());
  for (size_t i = 1; i < lifetimes.size(); ++i) {
    EXPECT_LT(lifetimes[i - 1].second, lifetimes[i].first)
        << "collections " << i - 1 << " and " << i << " of one name overlap";
  }
}

}  // namespace
}  // namespace kf
