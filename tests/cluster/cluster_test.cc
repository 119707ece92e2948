// The distributed service end to end (issue 4 acceptance): a real etcd, `kingfisher run coord`
// and three `kingfisher run node` processes sharing one data dir, driven through the public
// client library bootstrapped from the coordinator (fixture: cluster_fixture.h).
//
// KillNodeUnderLoad: producers append to every pchannel while the owner of one pchannel is
// killed with SIGKILL; its pchannels move (new term), producers wait for ready and go on, and
// afterwards every acknowledged message is in the WAL exactly once (no `_ik` twice, no payload
// twice) and a consumer that tailed the moved pchannel throughout saw no gap and no duplicate.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cluster_fixture.h"
#include "common/testing/wait_until.h"

namespace kf::cluster_testing {
namespace {

TEST_P(ClusterBackendTest, KillNodeUnderLoad) {
  const auto before = Owners();
  const auto [victim, old_term] = before.at(PChannel(0));
  ASSERT_GT(victim, 0);

  // A consumer tailing the pchannel that will move, from the start.
  std::atomic<bool> stop{false};
  absl::Mutex mu;
  std::vector<std::string> tailed;
  kingfisher::ConsumerOptions co;
  co.vchannel = VChannel(0);
  co.policy = kingfisher::DeliverPolicy::All();
  auto tail = client_->CreateConsumer(co);
  ASSERT_TRUE(tail.ok()) << tail.status();
  std::thread tailer([&] {
    while (!stop.load()) {
      auto m = (*tail)->Next(kingfisher::Clock::now() + std::chrono::milliseconds(200));
      if (m.ok() && m->type != kingfisher::MessageType::kTimeTick) {
        absl::MutexLock l(&mu);
        tailed.push_back(m->payload);
      }
    }
  });

  // Producers: one per pchannel, appending one at a time, recording every ack.
  constexpr int kPerPChannel = 300;
  std::map<int, std::vector<std::string>> acked;
  std::map<int, absl::Status> failed;
  std::atomic<int> total_acked{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kPChannels; ++p) {
    producers.emplace_back([&, p] {
      auto producer = client_->CreateProducer();
      ASSERT_TRUE(producer.ok());
      for (int i = 0; i < kPerPChannel; ++i) {
        kingfisher::Message m{.type = kingfisher::MessageType::kInsert,
                              .vchannel = VChannel(p),
                              .payload = absl::StrCat("p", p, "-m", i)};
        auto r = (*producer)->AppendSync(std::move(m));
        if (!r.ok()) {
          absl::MutexLock l(&mu);
          failed[p] = r.status();
          return;
        }
        absl::MutexLock l(&mu);
        acked[p].push_back(absl::StrCat("p", p, "-m", i));
        total_acked.fetch_add(1);
      }
    });
  }
  // Kill the owner of pchannel 0 once a third of the load is acknowledged.
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  kf::testing::WaitUntil([&] { return total_acked.load() >= kPChannels * kPerPChannel / 3; },
                         deadline - absl::Now());
  nodes_[victim]->Kill();
  const absl::Time killed_at = absl::Now();
  const int acked_at_kill = total_acked.load();
  size_t p0_at_kill;
  {
    absl::MutexLock l(&mu);
    p0_at_kill = acked[0].size();
  }
  // The figure for the closing note: how long pchannel 0 had no acknowledgement.
  absl::Time p0_resumed = absl::InfiniteFuture();
  while (absl::Now() < deadline) {
    {
      absl::MutexLock l(&mu);
      if (acked[0].size() > p0_at_kill || failed.contains(0)) {
        p0_resumed = absl::Now();
        break;
      }
    }
    absl::SleepFor(absl::Milliseconds(5));  // polling a counter the producer advances
  }
  for (auto& t : producers) t.join();
  std::printf("pchannel %s: first acknowledgement %.0f ms after kill -9 of node %lld\n",
              PChannel(0).c_str(), absl::ToDoubleMilliseconds(p0_resumed - killed_at),
              static_cast<long long>(victim));
  // The kill happened under load: appends were acknowledged on both sides of it.
  EXPECT_GT(acked_at_kill, 0);
  EXPECT_LT(acked_at_kill, kPChannels * kPerPChannel);
  EXPECT_LT(p0_at_kill, static_cast<size_t>(kPerPChannel));
  {
    absl::MutexLock l(&mu);
    for (const auto& [p, s] : failed) ADD_FAILURE() << "producer " << p << " failed: " << s;
  }

  // pchannel 0 moved to a live node at a higher term.
  ASSERT_TRUE(WaitAllAssigned(absl::Seconds(30)));
  const auto after = Owners();
  EXPECT_NE(after.at(PChannel(0)).first, victim);
  EXPECT_GT(after.at(PChannel(0)).second, old_term);

  // Every acknowledged message exactly once; nothing else appended twice.
  for (int p = 0; p < kPChannels; ++p) {
    auto all = ReadAll(VChannel(p), acked[p].size());
    std::map<std::string, int> seen_payload;
    std::set<std::string> seen_ik;
    for (const auto& m : all) {
      ++seen_payload[m.payload];
      auto ik = m.properties.find("_ik");
      ASSERT_NE(ik, m.properties.end());
      EXPECT_TRUE(seen_ik.insert(ik->second).second) << "_ik twice: " << ik->second;
    }
    for (const auto& payload : acked[p]) {
      EXPECT_EQ(seen_payload[payload], 1) << "acknowledged " << payload << " on pchannel " << p;
    }
    for (const auto& [payload, n] : seen_payload) EXPECT_EQ(n, 1) << payload << " twice";
  }

  // The tailing consumer: every acknowledged message of pchannel 0, once, in order.
  const absl::Time tail_deadline = absl::Now() + absl::Seconds(30);
  for (;;) {
    {
      absl::MutexLock l(&mu);
      if (tailed.size() >= acked[0].size() || absl::Now() > tail_deadline) break;
    }
    absl::SleepFor(absl::Milliseconds(20));  // polling what the tailer collected
  }
  stop = true;
  tailer.join();
  std::set<std::string> tailed_set(tailed.begin(), tailed.end());
  EXPECT_EQ(tailed_set.size(), tailed.size()) << "the tailing consumer got a duplicate";
  for (const auto& payload : acked[0]) {
    EXPECT_TRUE(tailed_set.contains(payload)) << "the tailing consumer missed " << payload;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ClusterBackendTest,
                         ::testing::Values("local", "objectstore", "quorum"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kf::cluster_testing
