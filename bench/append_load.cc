#include "append_load.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <thread>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "bench_util.h"
#include "kingfisher/producer.h"

namespace kf::bench {
namespace {

constexpr int kWarmupAppends = 20;

kingfisher::Message NewMessage(const std::string& vchannel, size_t payload_bytes) {
  kingfisher::Message m{.type = kingfisher::MessageType::kInsert,
                        .vchannel = vchannel,
                        .payload = std::string(payload_bytes, 'p')};
  return m;
}

// One producer's timed appends, `window` at a time; returns its latencies.
std::vector<double> Drive(kingfisher::Producer& producer, const std::string& vchannel,
                          size_t payload_bytes, uint64_t count, int window,
                          std::atomic<uint64_t>* acked) {
  if (window == 1) {
    std::vector<double> lat;
    lat.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      kingfisher::Message m = NewMessage(vchannel, payload_bytes);
      const auto t0 = Clock::now();
      auto r = producer.AppendSync(std::move(m));
      if (!r.ok()) Die("append to " + vchannel + ": " + r.status().ToString());
      lat.push_back(Seconds(Clock::now() - t0));
      acked->fetch_add(1, std::memory_order_relaxed);
    }
    return lat;
  }
  // Shared with the callbacks: the last one may still be unlocking when Drive returns.
  struct Window {
    absl::Mutex mu;
    int in_flight ABSL_GUARDED_BY(mu) = 0;
    absl::Status error ABSL_GUARDED_BY(mu);
    std::vector<double> lat ABSL_GUARDED_BY(mu);
  };
  auto w = std::make_shared<Window>();
  {
    absl::MutexLock l(&w->mu);
    w->lat.reserve(count);
  }
  for (uint64_t i = 0; i < count; ++i) {
    {
      absl::MutexLock l(&w->mu);
      auto room = [&]() ABSL_SHARED_LOCKS_REQUIRED(w->mu) { return w->in_flight < window; };
      w->mu.Await(absl::Condition(&room));
      if (!w->error.ok()) Die("append to " + vchannel + ": " + w->error.ToString());
      ++w->in_flight;
    }
    kingfisher::Message m = NewMessage(vchannel, payload_bytes);
    const auto t0 = Clock::now();
    producer.AppendAsync(std::move(m), [w, t0, acked](absl::StatusOr<kingfisher::AppendResult> r) {
      const double s = Seconds(Clock::now() - t0);
      absl::MutexLock l(&w->mu);
      if (!r.ok() && w->error.ok()) w->error = r.status();
      w->lat.push_back(s);
      --w->in_flight;
      acked->fetch_add(1, std::memory_order_relaxed);
    });
  }
  absl::MutexLock l(&w->mu);
  auto drained = [&]() ABSL_SHARED_LOCKS_REQUIRED(w->mu) { return w->in_flight == 0; };
  w->mu.Await(absl::Condition(&drained));
  if (!w->error.ok()) Die("append to " + vchannel + ": " + w->error.ToString());
  return std::exchange(w->lat, {});
}

}  // namespace

LoadResult RunAppendLoad(kingfisher::Client& client, const LoadOptions& o) {
  if (o.producers < 1 || o.window < 1 || o.vchannels.empty()) Die("bad load options");
  const auto n = static_cast<uint64_t>(o.producers);
  std::vector<std::unique_ptr<kingfisher::Producer>> producers;
  for (int i = 0; i < o.producers; ++i) {
    auto p = client.CreateProducer();
    if (!p.ok()) Die("producer: " + p.status().ToString());
    producers.push_back(*std::move(p));
  }
  // Untimed warm-up, all producers at once: opens every stream and route.
  {
    std::vector<std::thread> warm;
    for (int i = 0; i < o.producers; ++i) {
      warm.emplace_back([&, i] {
        const std::string& vc = o.vchannels[static_cast<size_t>(i) % o.vchannels.size()];
        for (int k = 0; k < kWarmupAppends; ++k) {
          auto r = producers[static_cast<size_t>(i)]->AppendSync(NewMessage(vc, o.payload_bytes));
          if (!r.ok()) Die("warm-up append to " + vc + ": " + r.status().ToString());
        }
      });
    }
    for (auto& t : warm) t.join();
  }

  std::atomic<uint64_t> acked{0};
  std::vector<std::vector<double>> lat(producers.size());
  absl::Notification go;
  std::vector<std::thread> threads;
  for (uint64_t i = 0; i < n; ++i) {
    // The first messages % n producers take one more.
    const uint64_t count = o.messages / n + (i < o.messages % n ? 1 : 0);
    threads.emplace_back([&, i, count] {
      go.WaitForNotification();
      lat[i] = Drive(*producers[i], o.vchannels[i % o.vchannels.size()], o.payload_bytes, count,
                     o.window, &acked);
    });
  }
  const auto start = Clock::now();
  go.Notify();
  // Progress every 2 s while the producers run.
  std::thread progress([&] {
    auto next = start + std::chrono::seconds(2);
    for (;;) {
      while (Clock::now() < next) {
        if (acked.load() >= o.messages) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling a counter
      }
      std::fprintf(stderr, "  [%s] %4.1f s: %" PRIu64 "/%" PRIu64 " acked\n", o.label.c_str(),
                   Seconds(Clock::now() - start), acked.load(), o.messages);
      next += std::chrono::seconds(2);
    }
  });
  for (auto& t : threads) t.join();
  LoadResult r;
  r.seconds = Seconds(Clock::now() - start);
  progress.join();
  for (auto& p : producers) p->Close();
  for (auto& l : lat) r.latencies.insert(r.latencies.end(), l.begin(), l.end());
  r.messages = r.latencies.size();
  return r;
}

}  // namespace kf::bench
