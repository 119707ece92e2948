// Fencing by term: in process and across processes (fork), including an old writer that is
// stopped (SIGSTOP) while a new owner takes over and resumed afterwards.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/errors.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "wal/backends/local/local_opener.h"
#include "wal/backends/local/test_util.h"

namespace kf::wal::local {
namespace {

using testing::AppendSync;
using testing::ReadAll;
using testing::Writer;

std::unique_ptr<WalOpener> Opener(const std::string& root) {
  LocalOpenerOptions o;
  o.root = root;
  o.segment_bytes = 16 << 10;
  return NewLocalOpener(o);
}

TEST(LocalWalFencingTest, InProcessNewTermFencesOldInstance) {
  kf::testing::TempDir dir("fence");
  const std::string& root = dir.path();
  auto opener = Opener(root);
  auto b1 = opener->Open(Writer("p", 1));
  ASSERT_TRUE(b1.ok());
  std::vector<std::string> acked;
  for (int i = 0; i < 20; ++i) {
    acked.push_back("t1-" + std::to_string(i));
    ASSERT_TRUE(AppendSync(b1->get(), acked.back()).ok());
  }
  EXPECT_TRUE(absl::IsFailedPrecondition(opener->Open(Writer("p", 1)).status()));
  auto b2 = opener->Open(Writer("p", 2));
  ASSERT_TRUE(b2.ok()) << b2.status();
  auto fenced = (*b1)->Append("late", [](absl::Status) {});
  EXPECT_TRUE(IsFenced(fenced.status())) << fenced.status();
  EXPECT_TRUE(IsFenced(opener->Open(Writer("p", 1)).status()));
  auto all = ReadAll(b2->get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), acked.size());
  for (size_t i = 0; i < acked.size(); ++i) EXPECT_EQ((*all)[i].data, acked[i]);
  auto id = AppendSync(b2->get(), "t2");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->entry(), acked.size());
}

// Two openers behave like two processes: only the on-disk fence connects them. b1 wrote "a" at
// term 5, then b2 opened at term 6, which fences b1.
class FencedByAnotherOpenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    opener1_ = Opener(root_);
    opener2_ = Opener(root_);
    auto b1 = opener1_->Open(Writer("p", 5));
    ASSERT_TRUE(b1.ok()) << b1.status();
    b1_ = *std::move(b1);
    ASSERT_TRUE(AppendSync(b1_.get(), "a").ok());
    auto b2 = opener2_->Open(Writer("p", 6));
    ASSERT_TRUE(b2.ok()) << b2.status();
    b2_ = *std::move(b2);
  }

  kf::testing::TempDir dir_{"fenced_by_other"};
  const std::string root_ = dir_.path();
  std::unique_ptr<WalOpener> opener1_, opener2_;
  std::unique_ptr<WalBackend> b1_, b2_;
};

TEST_F(FencedByAnotherOpenerTest, TheOlderWriterAcknowledgesNothingMore) {
  auto r = AppendSync(b1_.get(), "b");
  EXPECT_TRUE(IsFenced(r.status())) << r.status();
  EXPECT_TRUE(IsFenced(b1_->Append("c", nullptr).status()));
  EXPECT_TRUE(IsFenced(opener1_->Open(Writer("p", 4)).status()));
  ASSERT_TRUE(AppendSync(b2_.get(), "d").ok());
  auto all = ReadAll(b2_.get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].data, "a");
  EXPECT_EQ((*all)[1].data, "d");
}

TEST_F(FencedByAnotherOpenerTest, FenceFoundAfterAGroupSyncedFailsEveryAppendOfIt) {
  // Many appends at once make groups larger than the writer completes inline: their fence
  // check runs on the completion thread while the writer goes on with the next group.
  constexpr int kAppends = 64;
  absl::Mutex mu;
  std::vector<absl::Status> results;
  for (int i = 0; i < kAppends; ++i) {
    auto id = b1_->Append("x", [&](absl::Status s) {
      absl::MutexLock l(&mu);
      results.push_back(std::move(s));
    });
    if (!id.ok()) {  // refused once the fence is known: counts as a result too
      absl::MutexLock l(&mu);
      results.push_back(id.status());
    }
  }
  absl::MutexLock l(&mu);
  mu.Await(absl::Condition(
      +[](std::vector<absl::Status>* r) { return r->size() == kAppends; }, &results));
  for (const absl::Status& s : results) EXPECT_TRUE(IsFenced(s)) << s;
  auto all = ReadAll(b2_.get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].data, "a");
}

// One ack reported by the child: id and the index of the entry it wrote.
struct AckRecord {
  uint64_t id;
  uint64_t index;  // UINT64_MAX: the child stopped; `id` then holds its final status code
};

std::string ChildData(uint64_t i) {
  return "child-" + std::to_string(i) + std::string(i % 40, 'c');
}

// Child process body: appends in a loop at `term` and reports each ack. Never returns.
[[noreturn]] void RunChild(const std::string& root, int fd) {
  auto opener = Opener(root);
  auto b = opener->Open(Writer("p", 1));
  if (!b.ok()) {
    AckRecord r{static_cast<uint64_t>(b.status().code()), UINT64_MAX};
    (void)!::write(fd, &r, sizeof r);
    ::_exit(1);
  }
  absl::Status last;
  for (uint64_t i = 0;; ++i) {
    auto id = AppendSync(b->get(), ChildData(i));
    if (!id.ok()) {
      last = id.status();
      break;
    }
    AckRecord r{id->entry(), i};
    if (::write(fd, &r, sizeof r) != sizeof r) ::_exit(2);
  }
  AckRecord r{static_cast<uint64_t>(IsFenced(last) ? 1 : 0), UINT64_MAX};
  (void)!::write(fd, &r, sizeof r);
  ::close(fd);
  ::_exit(0);
}

bool ReadAck(int fd, AckRecord* r) {
  size_t got = 0;
  while (got < sizeof *r) {
    ssize_t n = ::read(fd, reinterpret_cast<char*>(r) + got, sizeof *r - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

void CrossProcess(bool stop_child) {
  kf::testing::TempDir dir(stop_child ? "fence_stop" : "fence_fork");
  const std::string& root = dir.path();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    RunChild(root, fds[1]);
  }
  ::close(fds[1]);
  std::map<uint64_t, uint64_t> acks;  // id -> entry index
  AckRecord r;
  while (acks.size() < 30) {
    ASSERT_TRUE(ReadAck(fds[0], &r)) << "child died early";
    ASSERT_NE(r.index, UINT64_MAX) << "child stopped early";
    acks[r.id] = r.index;
  }
  if (stop_child) {
    ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  }
  auto opener = Opener(root);
  auto b = opener->Open(Writer("p", 2));
  ASSERT_TRUE(b.ok()) << b.status();
  auto mine = AppendSync(b->get(), "parent");
  ASSERT_TRUE(mine.ok()) << mine.status();
  if (stop_child) {
    ASSERT_EQ(::kill(pid, SIGCONT), 0);
  }
  bool child_fenced = false;
  while (ReadAck(fds[0], &r)) {
    if (r.index == UINT64_MAX) {
      child_fenced = r.id == 1;
      break;
    }
    acks[r.id] = r.index;
  }
  ::close(fds[0]);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  EXPECT_TRUE(child_fenced) << "the old writer must end with FENCED";

  auto all = ReadAll(b->get());
  ASSERT_TRUE(all.ok()) << all.status();
  std::map<uint64_t, std::string> log;
  for (auto& e : *all) log[e.id.entry()] = e.data;
  for (const auto& [id, index] : acks) {
    auto it = log.find(id);
    ASSERT_TRUE(it != log.end()) << "child acked id " << id << " that the new owner lacks";
    EXPECT_EQ(it->second, ChildData(index)) << "id " << id;
  }
  EXPECT_EQ(log[mine->entry()], "parent");
  EXPECT_GT(mine->entry(), acks.rbegin()->first);
}

TEST(LocalWalFencingTest, CrossProcess) { CrossProcess(/*stop_child=*/false); }

TEST(LocalWalFencingTest, CrossProcessStoppedOldWriter) { CrossProcess(/*stop_child=*/true); }

}  // namespace
}  // namespace kf::wal::local
