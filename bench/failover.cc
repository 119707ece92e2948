#include "failover.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "bench_util.h"
#include "kingfisher/producer.h"

namespace kf::bench {
namespace {

// One producer appending one message at a time to one vchannel on its own thread.
class Writer {
 public:
  Writer(kingfisher::Client& client, std::string vchannel, size_t payload_bytes)
      : vchannel_(std::move(vchannel)), payload_(payload_bytes, 'f') {
    auto p = client.CreateProducer();
    if (!p.ok()) Die("producer: " + p.status().ToString());
    producer_ = *std::move(p);
    thread_ = std::thread([this] { Loop(); });
  }
  ~Writer() {
    stop_ = true;
    thread_.join();
    producer_->Close();
  }

  uint64_t acked() {
    absl::MutexLock l(&mu_);
    return acked_;
  }
  std::vector<std::string> errors() {
    absl::MutexLock l(&mu_);
    return errors_;
  }
  // Runs `kill` on the writer's thread right after the next acknowledgement and starts timing.
  void ArmKill(std::function<void()> kill) {
    absl::MutexLock l(&mu_);
    kill_ = std::move(kill);
    killed_at_.reset();
    first_ack_.reset();
  }
  // The armed kill's time and the first acknowledgement after it, once known.
  std::optional<Clock::time_point> killed_at() {
    absl::MutexLock l(&mu_);
    return killed_at_;
  }
  std::optional<Clock::time_point> first_ack() {
    absl::MutexLock l(&mu_);
    return first_ack_;
  }

 private:
  void Loop() {
    while (!stop_) {
      kingfisher::Message m{
          .type = kingfisher::MessageType::kInsert, .vchannel = vchannel_, .payload = payload_};
      auto r = producer_->AppendSync(std::move(m));
      const auto now = Clock::now();
      std::function<void()> kill;
      {
        absl::MutexLock l(&mu_);
        if (!r.ok()) {
          errors_.push_back(vchannel_ + ": " + r.status().ToString());
        } else {
          ++acked_;
          if (killed_at_ && !first_ack_) first_ack_ = now;
          kill = std::exchange(kill_, nullptr);
        }
      }
      if (!r.ok()) {
        // Only after a failed append (retries up to the 60 s deadline came first): no busy loop.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      if (kill) {
        const auto t = Clock::now();
        kill();
        absl::MutexLock l(&mu_);
        killed_at_ = t;
      }
    }
  }

  const std::string vchannel_;
  const std::string payload_;
  std::unique_ptr<kingfisher::Producer> producer_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  uint64_t acked_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> errors_ ABSL_GUARDED_BY(mu_);
  std::function<void()> kill_ ABSL_GUARDED_BY(mu_);
  std::optional<Clock::time_point> killed_at_ ABSL_GUARDED_BY(mu_);
  std::optional<Clock::time_point> first_ack_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: starts after the members it uses
};

// The node owning `pchannel` and its term per the coordinator ({0, 0} if unknown).
std::pair<int64_t, int64_t> Owner(LocalCluster& cluster, const std::string& pchannel) {
  auto status = cluster.Status();
  if (!status.ok()) return {0, 0};
  for (const auto& p : status->pchannels) {
    if (p.pchannel == pchannel && p.state == "ASSIGNED") return {p.node, p.term};
  }
  return {0, 0};
}

}  // namespace

FailoverResult RunFailoverTrials(LocalCluster& cluster, const FailoverOptions& o) {
  const std::vector<std::string> pchannels = cluster.PChannels();
  std::vector<std::unique_ptr<Writer>> writers;
  for (const auto& p : pchannels) {
    writers.push_back(std::make_unique<Writer>(cluster.client(), p + "_failover", o.payload_bytes));
  }
  FailoverResult result;
  for (int trial = 0; trial < o.trials; ++trial) {
    if (!cluster.WaitSteady(absl::Seconds(60))) {
      Die("the cluster did not become steady (3 nodes, all ASSIGNED, balanced) in 60 s");
    }
    // Every producer acknowledged since the cluster became steady: its route is current.
    std::vector<uint64_t> base;
    for (auto& w : writers) base.push_back(w->acked());
    const absl::Time ready_deadline = absl::Now() + absl::Seconds(30);
    for (size_t i = 0; i < writers.size(); ++i) {
      while (writers[i]->acked() <= base[i]) {
        if (absl::Now() > ready_deadline) Die("a producer made no progress on a steady cluster");
        absl::SleepFor(absl::Milliseconds(5));  // polling a counter the writer advances
      }
    }
    const size_t index = static_cast<size_t>(trial) % pchannels.size();
    const std::string& target = pchannels[index];
    const auto [victim, old_term] = Owner(cluster, target);
    if (victim <= 0) Die(target + " has no owner on a steady cluster");
    Writer& writer = *writers[index];
    writer.ArmKill([&cluster, victim = victim] { cluster.KillNode(victim); });

    // Until the first acknowledgement after the kill; meanwhile the coordinator's view.
    std::optional<Clock::time_point> reassigned;
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    std::optional<Clock::time_point> killed_at, first_ack;
    for (;;) {
      killed_at = writer.killed_at();
      first_ack = writer.first_ack();
      if (killed_at && !reassigned) {
        const auto [node, term] = Owner(cluster, target);
        if (node > 0 && node != victim && term > old_term) reassigned = Clock::now();
      }
      if (first_ack && reassigned) break;
      if (absl::Now() > deadline) Die("no acknowledgement on " + target + " 60 s after the kill");
      absl::SleepFor(absl::Milliseconds(10));  // polling; 10 ms is the reassignment's resolution
    }
    // ASSIGNED came before the acknowledgement; a poll that saw it later only bounds it.
    reassigned = std::min(*reassigned, *first_ack);
    result.first_ack.push_back(Seconds(*first_ack - *killed_at));
    result.reassigned.push_back(Seconds(*reassigned - *killed_at));
    std::fprintf(stderr,
                 "  [failover] trial %d/%d: killed node %lld (owner of %s): ASSIGNED elsewhere "
                 "after %.0f ms, first ack after %.0f ms\n",
                 trial + 1, o.trials, static_cast<long long>(victim), target.c_str(),
                 result.reassigned.back() * 1e3, result.first_ack.back() * 1e3);
    if (!cluster.RestartNode(victim)) Die("node " + std::to_string(victim) + " did not restart");
  }
  if (!cluster.WaitSteady(absl::Seconds(60))) Die("the cluster did not become steady at the end");
  for (auto& w : writers) {
    for (auto& e : w->errors()) result.errors.push_back(std::move(e));
  }
  return result;
}

}  // namespace kf::bench
