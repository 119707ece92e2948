// Crash test (issue acceptance): a child process appends with 8 concurrent producers to a
// WAL — on the local-disk backend, and on the objectstore backend over a local object store and
// an embedded metadata store — and is killed with SIGKILL at a random point; after each restart
// every acknowledged message is read back exactly once, in timetick order, and timeticks keep
// increasing across restarts. 20+ rounds over one data directory.
//
// The child reports an ack only after Wal::AppendSync returned OK, one line per ack on a pipe:
// "<payload> <message-id> <timetick>". The parent kills it after a random number of acks, so
// appends are in flight at the moment of the kill.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "message/message.h"
#include "storage/tso/timestamp_allocator.h"
#include "wal/testing/backend_under_test.h"
#include "wal/wal.h"

namespace kf {
namespace {

constexpr char kPChannel[] = "kf-dml_0";
constexpr int kProducers = 8;

using wal::testing::BackendKind;

struct Env {
  std::filesystem::path dir;
  BackendKind kind;
  std::string tso_path() const { return (dir / "tso").string(); }
};

// An open WAL and the stores under it (declared first: destroyed after the WAL).
struct OpenedWal {
  std::unique_ptr<wal::testing::BackendUnderTest> log;
  std::unique_ptr<wal::Wal> wal;
};

absl::StatusOr<OpenedWal> OpenAt(const Env& env, Term term, TimestampAllocator* tso) {
  OpenedWal out;
  out.log = std::make_unique<wal::testing::BackendUnderTest>(env.kind, env.dir, kPChannel);
  auto backend = out.log->Open(term);
  if (!backend.ok()) return backend.status();
  auto wal =
      wal::OpenWal({.pchannel = kPChannel, .tso = tso, .timetick_interval = absl::Milliseconds(5)},
                   std::move(*backend));
  if (!wal.ok()) return wal.status();
  out.wal = *std::move(wal);
  return out;
}

// The child: append forever from 8 threads, report every ack. Never returns.
[[noreturn]] void RunChild(const Env& env, Term term, int round, int out_fd) {
  auto tso = TimestampAllocator::Open(env.tso_path(), {});
  if (!tso.ok()) _exit(3);
  auto wal = OpenAt(env, term, tso->get());
  if (!wal.ok()) {
    std::fprintf(stderr, "child open failed: %s\n", wal.status().ToString().c_str());
    _exit(4);
  }
  FILE* out = fdopen(out_fd, "w");
  std::mutex out_mu;
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (uint64_t seq = 0;; ++seq) {
        std::string payload =
            "r" + std::to_string(round) + "p" + std::to_string(p) + "s" + std::to_string(seq);
        MutableMessage m(MessageType::kInsert, payload);
        m.set_vchannel(std::string(kPChannel) + "_crash");
        auto r = wal->wal->AppendSync({}, std::move(m));
        if (!r.ok()) _exit(5);
        std::lock_guard l(out_mu);
        std::fprintf(out, "%s %s %llu\n", payload.c_str(), r->id.ToText().c_str(),
                     static_cast<unsigned long long>(r->timetick.value()));
        std::fflush(out);
      }
    });
  }
  for (auto& t : threads) t.join();
  _exit(0);
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
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      RunChild(env_, term, round, fds[1]);
    }
    close(fds[1]);
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
