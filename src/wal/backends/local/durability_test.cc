// Acceptance: concurrent appenders over a file system that, on a simulated crash, keeps only
// what a completed fdatasync covered. After every crash and reopen, every acknowledged entry
// is present, intact, at its id.
#include <map>
#include <random>
#include <thread>

#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "storage/fs/fault_injection_file_system.h"
#include "storage/fs/posix_file_system.h"
#include "wal/backends/local/local_opener.h"
#include "wal/backends/local/test_util.h"

namespace kf::wal::local {
namespace {

using testing::ReadAll;
using testing::Writer;

TEST(LocalWalDurabilityTest, AckedEntriesSurviveRandomCrashes) {
  fs::PosixFileSystem posix;
  fs::FaultInjectionFileSystem fs(&posix);
  kf::testing::TempDir dir("durability");
  LocalOpenerOptions o;
  o.root = dir.path();
  o.fs = &fs;
  o.segment_bytes = 8 << 10;  // rolls happen between crashes too
  std::mt19937_64 rng(20240601);
  std::map<uint64_t, std::string> acked_all;  // every ack ever, across crashes
  constexpr int kCrashes = 60;
  constexpr int kThreads = 4;
  int64_t term = 1;
  for (int round = 0; round < kCrashes; ++round) {
    // Alternate a same-term restart and a takeover by a new term.
    if (round % 2 == 1) ++term;
    auto opener = NewLocalOpener(o);
    auto b = opener->Open(Writer("p", term));
    ASSERT_TRUE(b.ok()) << "round " << round << ": " << b.status();
    WalBackend* backend = b->get();

    // Verify everything acknowledged so far.
    auto all = ReadAll(backend);
    ASSERT_TRUE(all.ok()) << all.status();
    std::map<uint64_t, std::string> present;
    for (auto& e : *all) present[e.id.entry()] = std::move(e.data);
    for (const auto& [id, data] : acked_all) {
      auto it = present.find(id);
      ASSERT_TRUE(it != present.end()) << "round " << round << ": acked id " << id << " lost";
      ASSERT_EQ(it->second, data) << "round " << round << ": id " << id;
    }

    absl::Mutex mu;
    int acks = 0;
    std::map<uint64_t, std::string> acked_now;
    const int target = static_cast<int>(rng() % 40);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0;; ++i) {
          std::string data = "r" + std::to_string(round) + "-t" + std::to_string(t) + "-" +
                             std::to_string(i) + std::string(i % 50, 'd');
          std::promise<absl::Status> done;
          auto id = backend->Append(data, [&](absl::Status s) { done.set_value(s); });
          if (!id.ok()) return;
          if (!done.get_future().get().ok()) return;
          absl::MutexLock l(&mu);
          acked_now[id->entry()] = std::move(data);
          ++acks;
        }
      });
    }
    {
      std::pair<int*, int> arg{&acks, target};
      absl::MutexLock l(&mu);
      mu.Await(absl::Condition(
          +[](std::pair<int*, int>* p) { return *p->first >= p->second; }, &arg));
    }
    ASSERT_TRUE(fs.SimulateCrash().ok());  // appends of the other threads are in flight
    (void)backend->Close();
    for (auto& th : threads) th.join();
    b->reset();
    fs.Restart();
    for (auto& [id, data] : acked_now) {
      auto [it, inserted] = acked_all.emplace(id, data);
      ASSERT_TRUE(inserted || it->second == data) << "id " << id << " acknowledged twice";
    }
  }
  EXPECT_GT(acked_all.size(), static_cast<size_t>(kCrashes));
}

}  // namespace
}  // namespace kf::wal::local
