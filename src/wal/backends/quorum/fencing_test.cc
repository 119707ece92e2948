// The fencing race of the quorum backend: two writers on one log, the old one paused (its
// replica senders held before they send), the new one opens (fences the ensemble, recovers and
// seals the tail), then the old one resumes. The old writer never gets an acknowledgement after
// the new one opened, and every acknowledged entry is in the new writer's log exactly once.
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "absl/synchronization/notification.h"
#include "common/errors.h"
#include "common/testing/wait_until.h"
#include "gtest/gtest.h"
#include "wal/backends/quorum/test_util.h"

namespace kf::wal::quorum {
namespace {

using testing::AppendSync;
using testing::QuorumEnv;
using testing::ReadN;
using testing::Writer;

// Holds the senders to the gated addresses while closed.
class Gate {
 public:
  void Close(std::set<std::string> addresses) {
    absl::MutexLock l(&mu_);
    closed_ = std::move(addresses);
  }
  void Open() {
    absl::MutexLock l(&mu_);
    closed_.clear();
    cv_.SignalAll();
  }
  void Pass(const std::string& address) {
    absl::MutexLock l(&mu_);
    while (closed_.count(address) > 0) cv_.Wait(&mu_);
  }

 private:
  absl::Mutex mu_;
  absl::CondVar cv_;
  std::set<std::string> closed_ ABSL_GUARDED_BY(mu_);
};

struct Outcomes {
  absl::Mutex mu;
  std::map<std::string, absl::Status> by_payload ABSL_GUARDED_BY(mu);
  int acked_after_open ABSL_GUARDED_BY(mu) = 0;
  std::atomic<bool> new_writer_open{false};
};

void AppendTracked(WalBackend* b, Outcomes* out, const std::string& payload,
                   std::promise<void>* done) {
  auto id = b->Append(payload, [out, payload, done](absl::Status s) {
    absl::MutexLock l(&out->mu);
    if (s.ok() && out->new_writer_open.load()) ++out->acked_after_open;
    out->by_payload[payload] = s;
    if (done != nullptr) done->set_value();
  });
  ASSERT_TRUE(id.ok()) << id.status();
}

// The scenario with the old writer's senders held for the replicas in `held` (all three: it
// sent nothing of the later entries; two: they reached one replica only).
void RunRace(size_t held_count) {
  QuorumEnv env(3, "quorum_fence");
  Gate gate;
  auto old_options = env.Options();
  old_options.ack_timeout = absl::Seconds(30);  // the pause must not look like a dead quorum
  old_options.before_send = [&gate](const std::string& a) { gate.Pass(a); };
  auto old_opener = NewQuorumOpener(old_options);
  auto old_writer = old_opener->Open(Writer("ch", 1));
  ASSERT_TRUE(old_writer.ok()) << old_writer.status();

  Outcomes out;
  std::vector<std::promise<void>> first(20);
  for (int i = 0; i < 20; ++i) {
    AppendTracked(old_writer->get(), &out, "old-" + std::to_string(i), &first[i]);
  }
  for (auto& f : first) f.get_future().wait();

  // Pause: the old writer queues more but its senders are held.
  std::set<std::string> held(env.addresses().begin(),
                             env.addresses().begin() + static_cast<ptrdiff_t>(held_count));
  gate.Close(held);
  std::vector<std::promise<void>> second(20);
  for (int i = 20; i < 40; ++i) {
    AppendTracked(old_writer->get(), &out, "old-" + std::to_string(i), &second[i - 20]);
  }
  if (held_count < 3) {
    // The unheld replica gets the later entries; wait (bounded) until it has them durable.
    const int free_index = static_cast<int>(held_count);
    kf::testing::WaitUntil(
        [&] { return env.server(free_index)->store()->DurableEnd("ch", 0).value_or(0) >= 40; },
        absl::Seconds(10));
    ASSERT_EQ(env.server(free_index)->store()->DurableEnd("ch", 0), 40u);
  }

  auto new_opener = NewQuorumOpener(env.Options());
  auto new_writer = new_opener->Open(Writer("ch", 2));
  ASSERT_TRUE(new_writer.ok()) << new_writer.status();
  out.new_writer_open = true;

  gate.Open();  // the old writer resumes
  for (auto& f : second) f.get_future().wait();
  EXPECT_TRUE(IsFenced((*old_writer)->Append("old-late", nullptr).status()));

  ASSERT_TRUE(AppendSync(new_writer->get(), "new-0").ok());
  {
    absl::MutexLock l(&out.mu);
    EXPECT_EQ(out.acked_after_open, 0);
    for (int i = 0; i < 20; ++i) EXPECT_TRUE(out.by_payload["old-" + std::to_string(i)].ok());
    for (int i = 20; i < 40; ++i) {
      EXPECT_FALSE(out.by_payload["old-" + std::to_string(i)].ok());
    }
  }
  // Everything the old writer got acknowledged is in the log exactly once, in order, followed
  // by what the recovery declared durable (held_count < 3: entries 20..39, which reached one
  // replica) and the new writer's entry.
  const size_t expected = held_count < 3 ? 41 : 21;
  auto all = ReadN(new_writer->get(), {}, expected);
  ASSERT_TRUE(all.ok()) << all.status();
  for (size_t i = 0; i + 1 < expected; ++i) {
    EXPECT_EQ((*all)[i].data, "old-" + std::to_string(i));
  }
  EXPECT_EQ(all->back().data, "new-0");
  auto scanner = (*new_writer)->Read({ReadOptions::Start::kAfter, all->back().id});
  ASSERT_TRUE(scanner.ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded((*scanner)->Next(absl::Now()).status()));
  (void)(*old_writer)->Close();
  ASSERT_TRUE((*new_writer)->Close().ok());
}

TEST(QuorumFencingTest, PausedOldWriterSentNothing) { RunRace(3); }

// The old writer's entries reached every replica, but it is paused before acknowledging them
// (the answers arrive late): the new writer recovers them, and the old one must not
// acknowledge them anymore — it finds the owner record changed.
TEST(QuorumFencingTest, AnswersDeliveredAfterTheNewOpenAreNotAcknowledged) {
  QuorumEnv env(3, "quorum_late");
  absl::Mutex mu;
  bool hold = false;
  bool held = false;
  auto old_options = env.Options();
  old_options.ack_timeout = absl::Seconds(30);
  old_options.before_ack = [&] {
    absl::MutexLock l(&mu);
    held = hold;
    auto released = [&] { return !hold; };
    mu.Await(absl::Condition(&released));
  };
  auto old_opener = NewQuorumOpener(old_options);  // outlives its backends
  auto old_writer = old_opener->Open(Writer("ch", 1));
  ASSERT_TRUE(old_writer.ok()) << old_writer.status();
  ASSERT_TRUE(AppendSync(old_writer->get(), "old-0").ok());
  {
    absl::MutexLock l(&mu);
    hold = true;
  }
  Outcomes out;
  std::promise<void> late_done;
  AppendTracked(old_writer->get(), &out, "old-1", &late_done);
  {
    absl::MutexLock l(&mu);
    auto waiting = [&] { return held; };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&waiting), absl::Seconds(10)));
  }
  auto new_opener = NewQuorumOpener(env.Options());
  auto new_writer = new_opener->Open(Writer("ch", 2));
  ASSERT_TRUE(new_writer.ok()) << new_writer.status();
  out.new_writer_open = true;
  {
    absl::MutexLock l(&mu);
    hold = false;
  }
  late_done.get_future().wait();
  {
    absl::MutexLock l(&out.mu);
    EXPECT_EQ(out.acked_after_open, 0);
    EXPECT_TRUE(IsFenced(out.by_payload["old-1"])) << out.by_payload["old-1"];
  }
  auto all = ReadN(new_writer->get(), {}, 2);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ((*all)[0].data, "old-0");
  EXPECT_EQ((*all)[1].data, "old-1");  // durable on the replicas: recovered, exactly once
  (void)(*old_writer)->Close();
  ASSERT_TRUE((*new_writer)->Close().ok());
}

TEST(QuorumFencingTest, PausedOldWriterReachedOneReplica) { RunRace(2); }

// No pause: the new writer opens while the old one appends as fast as it can. Every entry the
// old writer got acknowledged is in the new writer's log exactly once.
TEST(QuorumFencingTest, ConcurrentTakeoverLosesNoAcknowledgedEntry) {
  QuorumEnv env(3, "quorum_fence_conc");
  auto old_opener = NewQuorumOpener(env.Options());
  auto old_writer = old_opener->Open(Writer("ch", 1));
  ASSERT_TRUE(old_writer.ok()) << old_writer.status();
  Outcomes out;
  std::atomic<int> issued{0};
  std::atomic<bool> stop{false};
  absl::Notification some_acked;
  std::thread load([&] {
    for (int i = 0; !stop.load(); ++i) {
      const std::string payload = "old-" + std::to_string(i);
      auto id = (*old_writer)->Append(payload, [&, payload](absl::Status s) {
        absl::MutexLock l(&out.mu);
        out.by_payload[payload] = s;
        if (s.ok() && out.by_payload.size() >= 50 && !some_acked.HasBeenNotified()) {
          some_acked.Notify();
        }
      });
      if (!id.ok()) break;  // fenced
      issued = i + 1;
    }
  });
  some_acked.WaitForNotification();
  auto new_opener = NewQuorumOpener(env.Options());
  auto new_writer = new_opener->Open(Writer("ch", 2));
  ASSERT_TRUE(new_writer.ok()) << new_writer.status();
  stop = true;
  load.join();
  (void)(*old_writer)->Close();  // every callback has run
  std::set<std::string> acked;
  {
    absl::MutexLock l(&out.mu);
    for (const auto& [p, s] : out.by_payload) {
      if (s.ok()) acked.insert(p);
    }
  }
  ASSERT_TRUE(AppendSync(new_writer->get(), "new-0").ok());
  auto scanner = (*new_writer)->Read({});
  ASSERT_TRUE(scanner.ok());
  std::map<std::string, int> seen;
  for (;;) {
    auto e = (*scanner)->Next(absl::Now() + absl::Seconds(10));
    ASSERT_TRUE(e.ok()) << e.status();
    if (e->data == "new-0") break;
    ++seen[e->data];
  }
  for (const auto& p : acked) EXPECT_EQ(seen[p], 1) << p;
  for (const auto& [p, n] : seen) EXPECT_EQ(n, 1) << p;
  ASSERT_TRUE((*new_writer)->Close().ok());
}

}  // namespace
}  // namespace kf::wal::quorum
