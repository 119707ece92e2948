// Crash test (issue acceptance): a child process appends with 8 concurrent producers to a
// WAL — on the local-disk backend, on the objectstore backend over a local object store and an
// embedded metadata store, and on the quorum backend over 3 logstores — and is killed with
// SIGKILL at a random point; after each restart every acknowledged message is read back exactly
// once, in timetick order, and timeticks keep increasing across restarts. 20+ rounds over one
// data directory.
//
// The child (wal_crash_child, a fresh process each round) reports an ack only after
// Wal::AppendSync returned OK, one line per ack on a pipe: "<payload> <message-id> <timetick>".
// The parent kills it after a random number of acks, so appends are in flight at the moment of
// the kill.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "crash_wal.h"
#include "gtest/gtest.h"
#include "message/message.h"

extern char** environ;

namespace kf {
namespace {

using crash::Env;
using crash::kPChannel;
using crash::OpenAt;
using wal::testing::BackendKind;

// Starts wal_crash_child (beside this binary) with its stdout on `out_fd`.
pid_t SpawnChild(const Env& env, Term term, int round, int out_fd, int other_fd) {
  const std::string path =
      (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "wal_crash_child").string();
  std::vector<std::string> args = {path, wal::testing::BackendName(env.kind), env.dir.string(),
                                   std::to_string(term.value()), std::to_string(round)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out_fd);
  posix_spawn_file_actions_addclose(&actions, other_fd);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

struct Ack {
  std::string id;
  uint64_t timetick;
};

class WalCrashTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    env_.kind = GetParam();
    env_.dir =
        std::filesystem::temp_directory_path() /
        ("kf-crash-" + std::to_string(getpid()) + "-" + wal::testing::BackendName(GetParam()));
    std::filesystem::remove_all(env_.dir);
    std::filesystem::create_directories(env_.dir);
  }
  void TearDown() override { std::filesystem::remove_all(env_.dir); }
  Env env_;
};

TEST_P(WalCrashTest, EveryAcknowledgedAppendSurvivesSigkillExactlyOnce) {
  std::mt19937 rng(testing::UnitTest::GetInstance()->random_seed());
  std::map<std::string, Ack> acked;  // payload -> ack, over all rounds
  uint64_t last_round_max_tt = 0;
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    Term term(2 * round + 1);
    pid_t pid = SpawnChild(env_, term, round, fds[1], fds[0]);
    close(fds[1]);
    ASSERT_GT(pid, 0) << "cannot start wal_crash_child";
    FILE* in = fdopen(fds[0], "r");
    int kill_after = std::uniform_int_distribution<int>(1, 400)(rng);
    char line[256];
    int got = 0;
    while (got < kill_after && std::fgets(line, sizeof line, in)) {
      std::vector<std::string> f =
          absl::StrSplit(absl::string_view(line, strcspn(line, "\n")), ' ');
      ASSERT_EQ(f.size(), 3u) << line;
      Ack a{f[1], 0};
      ASSERT_TRUE(absl::SimpleAtoi(f[2], &a.timetick));
      ASSERT_TRUE(acked.emplace(f[0], a).second) << "payload acked twice: " << f[0];
      ++got;
    }
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    // Acks already written to the pipe before the kill are acks too.
    while (std::fgets(line, sizeof line, in)) {
      std::vector<std::string> f =
          absl::StrSplit(absl::string_view(line, strcspn(line, "\n")), ' ');
      if (f.size() != 3) continue;  // a line cut by the kill was never a complete ack
      Ack a{f[1], 0};
      ASSERT_TRUE(absl::SimpleAtoi(f[2], &a.timetick));
      ASSERT_TRUE(acked.emplace(f[0], a).second);
    }
    fclose(in);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited on its own with " << status;

    // Restart: reopen at a higher term (as a new owner would) and read everything back.
    auto tso = TimestampAllocator::Open(env_.tso_path(), {});
    ASSERT_TRUE(tso.ok());
    auto opened = OpenAt(env_, Term(2 * round + 2), tso->get());
    ASSERT_TRUE(opened.ok()) << opened.status();
    wal::Wal* wal = opened->wal.get();
    auto scanner = wal->Read({});
    ASSERT_TRUE(scanner.ok());
    std::map<std::string, int> seen;
    uint64_t prev_tt = 0;
    for (;;) {
      auto m = (*scanner)->Next({}, absl::Now());
      if (absl::IsDeadlineExceeded(m.status())) break;
      ASSERT_TRUE(m.ok()) << m.status();
      uint64_t tt = (*m)->timetick().value();
      ASSERT_GT(tt, prev_tt) << "timeticks must strictly increase in WAL order";
      prev_tt = tt;
      if ((*m)->type() != MessageType::kInsert) continue;
      const std::string& payload = (*m)->message().payload();
      ++seen[payload];
      auto it = acked.find(payload);
      if (it != acked.end()) {
        EXPECT_EQ(it->second.id, (*m)->id().ToText()) << payload;
        EXPECT_EQ(it->second.timetick, tt) << payload;
      }
    }
    for (auto& [payload, n] : seen) EXPECT_EQ(n, 1) << payload << " stored " << n << " times";
    for (auto& [payload, ack] : acked) {
      EXPECT_TRUE(seen.count(payload))
          << "acknowledged " << payload << " at " << ack.id << " is lost";
    }
    EXPECT_GE(prev_tt, last_round_max_tt);
    last_round_max_tt = prev_tt;
    // A fresh append after the restart gets a timetick above everything before the crash.
    MutableMessage m(MessageType::kInsert, "probe" + std::to_string(round));
    m.set_vchannel(std::string(kPChannel) + "_crash");
    auto probe = wal->AppendSync({}, std::move(m));
    ASSERT_TRUE(probe.ok()) << probe.status();
    EXPECT_GT(probe->timetick.value(), prev_tt);
    acked.emplace("probe" + std::to_string(round),
                  Ack{probe->id.ToText(), probe->timetick.value()});
    wal->Close();
    if (HasFatalFailure() || HasNonfatalFailure()) return;
  }
  EXPECT_GT(acked.size(), static_cast<size_t>(kRounds));
}

INSTANTIATE_TEST_SUITE_P(Backends, WalCrashTest,
                         ::testing::Values(BackendKind::kLocal, BackendKind::kObjectStore,
                                           BackendKind::kQuorum),
                         [](const auto& info) { return wal::testing::BackendName(info.param); });

}  // namespace
}  // namespace kf
