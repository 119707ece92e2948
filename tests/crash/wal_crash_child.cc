// The crash test's appending child, a process of its own (exec'd, not just forked: gRPC, which
// the quorum backend uses, does not survive fork in a process that has used it already).
//
//   wal_crash_child <backend> <dir> <term> <round>
//
// Opens the pchannel's WAL at <term> and appends forever from 8 threads; after each
// Wal::AppendSync that returned OK it writes one line to stdout:
// "<payload> <message-id> <timetick>". Never exits on its own unless something fails.
#include <signal.h>
#include <sys/prctl.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "crash_wal.h"
#include "message/message.h"

namespace kf::crash {
namespace {

constexpr int kProducers = 8;

int Run(const Env& env, Term term, int round) {
  auto tso = TimestampAllocator::Open(env.tso_path(), {});
  if (!tso.ok()) {
    std::fprintf(stderr, "child: tso: %s\n", tso.status().ToString().c_str());
    return 3;
  }
  auto wal = OpenAt(env, term, tso->get());
  if (!wal.ok()) {
    std::fprintf(stderr, "child: open: %s\n", wal.status().ToString().c_str());
    return 4;
  }
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
        if (!r.ok()) {
          std::fprintf(stderr, "child: append: %s\n", r.status().ToString().c_str());
          std::_Exit(5);
        }
        std::lock_guard l(out_mu);
        std::fprintf(stdout, "%s %s %llu\n", payload.c_str(), r->id.ToText().c_str(),
                     static_cast<unsigned long long>(r->timetick.value()));
        std::fflush(stdout);
      }
    });
  }
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace
}  // namespace kf::crash

int main(int argc, char** argv) {
  // Never outlive the test (it may stop at a failed assertion before killing this process).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int64_t term = 0;
  int round = 0;
  auto kind = argc == 5 ? kf::wal::testing::BackendKindFromName(argv[1]) : std::nullopt;
  if (!kind || !absl::SimpleAtoi(argv[3], &term) || !absl::SimpleAtoi(argv[4], &round)) {
    std::fprintf(stderr,
                 "usage: wal_crash_child <local|objectstore|quorum> <dir> <term> <round>\n");
    return 2;
  }
  return kf::crash::Run({.dir = argv[2], .kind = *kind}, kf::Term(term), round);
}
