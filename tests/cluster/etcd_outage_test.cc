// EtcdOutageUnderNodes (issue 4 acceptance, fixture: cluster_fixture.h): etcd is killed with
// SIGKILL under load and kept down for 3.5 s, longer than every lease TTL (2 s), then restarted
// on the same ports and data. The producers use a short append timeout (3 s), so appends during
// the outage fail instead of waiting it out; those are recorded, not asserted.
//
// Proves: no kingfisher process exits while etcd is gone or when it returns (no crash loop);
// every process logs the failure as an error it retries (the keepalive retry lines, the
// operator-visible contract); the coordinator stops acting and acts again; afterwards the
// cluster recovers — appends issued after etcd returned succeed on every pchannel, all
// pchannels are ASSIGNED — and every acknowledged append is in the WAL exactly once, in
// timetick order.
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster_fixture.h"
#include "common/testing/wait_until.h"

namespace kf::cluster_testing {
namespace {

// True if some line of `log` contains every one of `parts`.
bool HasLine(const std::string& log, const std::vector<std::string>& parts) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    bool all = true;
    for (const auto& p : parts) all = all && absl::StrContains(line, p);
    if (all) return true;
  }
  return false;
}

// Polls `cond` (e.g. a process's log) until it holds; false after 30 s.
bool PollUntil(const std::function<bool()>& cond) {
  return kf::testing::WaitUntil(cond, absl::Seconds(30), absl::Milliseconds(50));
}

size_t Count(const std::string& log, const std::string& text) {
  size_t n = 0;
  for (size_t pos = log.find(text); pos != std::string::npos; pos = log.find(text, pos + 1)) ++n;
  return n;
}

TEST_F(ClusterTest, EtcdOutageUnderNodes) {
  auto client = Connect(/*attempt_timeout=*/std::chrono::seconds(2),
                        /*append_timeout=*/std::chrono::seconds(3));
  ASSERT_NE(client, nullptr);
  Load load(client.get(), {0, 1, 2}, /*in_flight=*/2);
  ASSERT_TRUE(load.WaitAcked(-1, 150, absl::Seconds(30)));

  std::vector<testing::ServerProcess*> all = {coord_.get()};
  for (auto& [id, node] : nodes_) all.push_back(node.get());
  auto expect_all_running = [&](const char* when) {
    bool running = true;
    for (auto* p : all) {
      if (p->Running()) continue;
      ADD_FAILURE() << "a process exited " << when << ":\n" << p->Output();
      running = false;
    }
    return running;
  };

  etcd_.Kill();
  // The outage itself lasts a fixed wall-clock time (the scenario, not a synchronisation);
  // meanwhile every process must stay up.
  const absl::Time back_at = absl::Now() + absl::Milliseconds(3500);
  while (absl::Now() < back_at && expect_all_running("during the etcd outage")) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  // Errors, each with its retry, while etcd was gone.
  for (auto& [id, node] : nodes_) {
    EXPECT_TRUE(HasLine(node->Output(), {"level=warn", "lease keepalive failed", "retrying"}))
        << "node " << id << ":\n"
        << node->Output();
  }
  EXPECT_TRUE(HasLine(coord_->Output(), {"level=error", "lease keepalive failed"}))
      << coord_->Output();
  EXPECT_TRUE(absl::StrContains(coord_->Output(), "stopped acting")) << coord_->Output();
  const size_t acting_before = Count(coord_->Output(), "acting as leader");

  ASSERT_TRUE(etcd_.Start().ok()) << etcd_.LogTail();
  // Recovery, on observable state: every node lost its session (its lease expired) and
  // registers again, the coordinator acts again, the assignment settles.
  for (auto& [id, node] : nodes_) {
    EXPECT_TRUE(absl::StrContains(node->Output(), "session lost")) << "node " << id;
    EXPECT_TRUE(PollUntil([&node = node] { return Count(node->Output(), "registered at") >= 2; }))
        << "node " << id << " did not register again:\n"
        << node->Output();
  }
  EXPECT_TRUE(PollUntil([&] {
    return Count(coord_->Output(), "acting as leader") > acting_before;
  })) << coord_->Output();
  ASSERT_TRUE(WaitSettled(absl::Seconds(30)));
  // Appends succeed again: 50 issued from now on are acknowledged on every pchannel.
  std::vector<size_t> first_after(kPChannels);
  for (int p = 0; p < kPChannels; ++p) first_after[p] = load.issued(p);
  for (int p = 0; p < kPChannels; ++p) {
    ASSERT_TRUE(load.WaitAckedFrom(p, first_after[p], 50, absl::Seconds(30)))
        << "pchannel " << p << " did not recover\n"
        << coord_->Output();
  }
  load.Stop();
  expect_all_running("after etcd returned");

  for (int p = 0; p < kPChannels; ++p) {
    const std::vector<Load::Op> ops = load.Ops(p);
    // Failed appends: recorded; each must say what happened (the deadline passed while
    // retrying an unavailable cluster).
    std::map<absl::StatusCode, int> failures;
    std::string example;
    for (const Load::Op& op : ops) {
      if (op.result.ok()) continue;
      ++failures[op.result.status().code()];
      if (example.empty()) example = op.result.status().ToString();
      EXPECT_TRUE(absl::IsDeadlineExceeded(op.result.status()) ||
                  absl::IsUnavailable(op.result.status()))
          << op.payload << ": " << op.result.status();
      EXPECT_FALSE(op.result.status().message().empty());
    }
    std::string summary;
    for (const auto& [code, n] : failures) {
      absl::StrAppend(&summary, " ", absl::StatusCodeToString(code), "=", n);
    }
    std::printf("pchannel %d: %zu appends, failed:%s%s%s\n", p, ops.size(),
                summary.empty() ? " none" : summary.c_str(), example.empty() ? "" : ", e.g. ",
                example.c_str());

    const auto log = ReadPChannelToEnd(p);
    ExpectExactlyOnce(log, ops, PChannel(p));
    ExpectOrdered(log, PChannel(p));
  }
  expect_all_running("at the end");
}

}  // namespace
}  // namespace kf::cluster_testing
