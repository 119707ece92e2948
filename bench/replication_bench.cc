// replication_bench: cross-cluster replication (docs/replication.md) between two real
// `kingfisher run standalone` servers on loopback, clusters "east" (primary) and "west"
// (secondary), through the public client library and the replicate services.
//   1. Apply throughput. --messages messages of --size bytes are appended to west by
//      --producers producers while west is not yet a secondary: west's own acknowledged
//      appends/s, the baseline. The same load goes to east; then east -> west is configured and
//      the bench polls west's checkpoint (Replicate.GetCheckpoint) until it holds a marker
//      appended after the load: west's apply rate, from the configuration to the marker (the
//      replicators' start included). Bar: >= 0.8 of west's own append rate.
//   2. Lag. One producer appends to east at --rate messages/s for --seconds (open loop, at most
//      --inflight unacknowledged); a consumer tails the peer vchannel on west. A message's lag is
//      the time from its ack on east to its delivery on west (one process, steady clock; the
//      sequence number travels in the payload). p50/p99, next to east's own ack latency.
//
// Usage: replication_bench [--messages N] [--producers N] [--size BYTES] [--rate N]
//                          [--seconds S] [--inflight N] [--dir DIR] [--bin-dir DIR]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "append_load.h"
#include "bench_flags.h"
#include "bench_util.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "kingfisher/client.h"
#include "kingfisher/consumer.h"
#include "kingfisher/producer.h"
#include "kingfisher/v1/replicate.grpc.pb.h"
#include "server_process.h"

namespace {

namespace v1 = kingfisher::v1;
using kf::bench::Clock;
using kf::bench::Die;
using kf::bench::Seconds;

struct Flags {
  uint64_t messages = 60000;
  int producers = 16;
  size_t size = 1024;
  double rate = 5000;
  double seconds = 10;
  int inflight = 256;
  kf::bench::BenchDirs dirs;
};

constexpr int kPChannels = 2;

std::unique_ptr<v1::ReplicateAdmin::Stub> Admin(const std::string& endpoint) {
  return v1::ReplicateAdmin::NewStub(
      grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
}
std::unique_ptr<v1::Replicate::Stub> Replicate(const std::string& endpoint) {
  return v1::Replicate::NewStub(grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
}

v1::GetReplicateConfigResponse ClusterOf(const std::string& endpoint) {
  grpc::ClientContext ctx;
  v1::GetReplicateConfigResponse out;
  grpc::Status s = Admin(endpoint)->GetReplicateConfig(&ctx, {}, &out);
  if (!s.ok()) Die("GetReplicateConfig " + endpoint + ": " + s.error_message());
  return out;
}

// east -> west, as `kfctl replicate configure` does it: the secondary first.
void Configure(const std::string& east, const std::string& west) {
  v1::ReplicateConfiguration config;
  for (const std::string& endpoint : {east, west}) {
    v1::GetReplicateConfigResponse got = ClusterOf(endpoint);
    v1::ReplicateCluster* c = config.add_clusters();
    c->set_cluster_id(got.cluster_id());
    c->set_endpoint(endpoint);
    *c->mutable_pchannels() = got.pchannels();
  }
  v1::ReplicateTopologyEdge* e = config.add_topology();
  e->set_source_cluster_id("east");
  e->set_target_cluster_id("west");
  for (const std::string& endpoint : {west, east}) {
    grpc::ClientContext ctx;
    v1::AlterReplicateConfigRequest request;
    *request.mutable_config() = config;
    v1::AlterReplicateConfigResponse response;
    grpc::Status s = Admin(endpoint)->AlterReplicateConfig(&ctx, request, &response);
    if (!s.ok()) Die("AlterReplicateConfig " + endpoint + ": " + s.error_message());
  }
}

// West's checkpoint of east's pchannel `i` (0: none yet).
uint64_t CheckpointOf(v1::Replicate::Stub& west, int i) {
  grpc::ClientContext ctx;
  v1::GetReplicateCheckpointRequest request;
  request.set_pchannel("west-dml_" + std::to_string(i));
  request.set_source_cluster_id("east");
  v1::GetReplicateCheckpointResponse response;
  if (!west.GetCheckpoint(&ctx, request, &response).ok()) return 0;
  return response.found() ? response.checkpoint().time_tick() : 0;
}

kf::bench::LoadResult Load(const std::string& endpoint, const std::string& cluster,
                           const Flags& f) {
  auto client = kingfisher::Client::Connect({.endpoint = endpoint});
  if (!client.ok()) Die("connect: " + client.status().ToString());
  kf::bench::LoadOptions o{.label = cluster,
                           .producers = f.producers,
                           .payload_bytes = f.size,
                           .messages = f.messages,
                           .window = 1};
  for (int i = 0; i < kPChannels; ++i) {
    o.vchannels.push_back(cluster + "-dml_" + std::to_string(i) + "_bench");
  }
  return kf::bench::RunAppendLoad(**client, o);
}

struct LagResult {
  std::vector<double> ack, lag;  // seconds
  uint64_t late = 0;             // sends that found the window full
};

LagResult Lag(const std::string& east, const std::string& west, const Flags& f) {
  auto east_client = kingfisher::Client::Connect({.endpoint = east});
  auto west_client = kingfisher::Client::Connect({.endpoint = west});
  if (!east_client.ok() || !west_client.ok()) Die("connect for the lag phase");
  auto producer = (*east_client)->CreateProducer();
  auto consumer = (*west_client)
                      ->CreateConsumer({.vchannel = "west-dml_0_lag",
                                        .policy = kingfisher::DeliverPolicy::Latest()});
  if (!producer.ok() || !consumer.ok()) Die("producer or consumer for the lag phase");
  const auto total = static_cast<uint64_t>(f.rate * f.seconds);
  std::vector<std::atomic<int64_t>> acked(total), delivered(total);
  for (uint64_t i = 0; i < total; ++i) acked[i] = delivered[i] = 0;
  auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
  };
  std::atomic<uint64_t> received{0};
  std::thread reader([&] {
    const auto give_up = Clock::now() + std::chrono::duration<double>(f.seconds + 30);
    while (received.load() < total && Clock::now() < give_up) {
      auto m = (*consumer)->Next(kingfisher::Clock::now() + std::chrono::seconds(1));
      if (!m.ok() || m->type != kingfisher::MessageType::kInsert || m->payload.size() < 8) continue;
      uint64_t seq = 0;
      std::memcpy(&seq, m->payload.data(), sizeof(seq));
      if (seq < total && delivered[seq].load() == 0) {
        delivered[seq] = now_ns();
        received.fetch_add(1);
      }
    }
  });
  LagResult out;
  std::vector<int64_t> sent(total);
  struct Window {
    int inflight = 0;
    int max = 0;
    bool HasRoom() const { return inflight < max; }
    bool Empty() const { return inflight == 0; }
  };
  absl::Mutex mu;
  Window window{.max = f.inflight};
  const auto start = Clock::now();
  for (uint64_t i = 0; i < total; ++i) {
    std::this_thread::sleep_until(start + std::chrono::duration<double>(i / f.rate));
    {
      absl::MutexLock lock(&mu);
      if (!window.HasRoom()) ++out.late;
      mu.Await(absl::Condition(&window, &Window::HasRoom));
      ++window.inflight;
    }
    std::string payload(std::max<size_t>(f.size, 8), 'x');
    std::memcpy(payload.data(), &i, sizeof(i));
    sent[i] = now_ns();
    (*producer)->AppendAsync({.type = kingfisher::MessageType::kInsert,
                              .vchannel = "east-dml_0_lag",
                              .payload = payload},
                             [&, i](absl::StatusOr<kingfisher::AppendResult> r) {
                               if (r.ok()) acked[i] = now_ns();
                               absl::MutexLock lock(&mu);
                               --window.inflight;
                             });
  }
  {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(&window, &Window::Empty));
  }
  reader.join();
  (*consumer)->Close();
  for (uint64_t i = 0; i < total; ++i) {
    if (acked[i] == 0) continue;
    out.ack.push_back((acked[i] - sent[i]) / 1e9);
    if (delivered[i] != 0) out.lag.push_back(std::max<int64_t>(0, delivered[i] - acked[i]) / 1e9);
  }
  if (out.lag.size() < total) {
    std::printf("lag: %zu of %" PRIu64 " messages delivered on west\n", out.lag.size(), total);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  kf::bench::FlagSet flags(argv[0]);
  flags.Add("--messages", &f.messages, "N", "phase 1: messages appended to each cluster");
  flags.Add("--producers", &f.producers, "N", "phase 1: producers, one append in flight each");
  flags.Add("--size", &f.size, "BYTES", "message size (at least 8)");
  flags.Add("--rate", &f.rate, "N", "phase 2: messages per second to the primary");
  flags.Add("--seconds", &f.seconds, "S", "phase 2: how long");
  flags.Add("--inflight", &f.inflight, "N", "phase 2: unacknowledged appends at most");
  flags.AddDirs(&f.dirs, "the two servers' data dirs");
  flags.Parse(argc, argv);
  if (f.messages == 0 || f.producers < 1 || f.size < 8 || f.rate <= 0 || f.seconds <= 0 ||
      f.inflight < 1) {
    flags.Fail(
        "--messages, --producers, --rate, --seconds, --inflight must be positive, --size >= 8");
  }
  const std::string root = kf::bench::StartRun("replication_bench", f.dirs);
  kf::testing::ServerProcess east(
      {.data_dir = root + "/east",
       .extra_args = {"--cluster", "east", "--pchannels", std::to_string(kPChannels)}});
  kf::testing::ServerProcess west(
      {.data_dir = root + "/west",
       .extra_args = {"--cluster", "west", "--pchannels", std::to_string(kPChannels)}});
  if (!east.Start()) Die("east did not start:\n" + east.Output());
  if (!west.Start()) Die("west did not start:\n" + west.Output());
  std::printf("replication_bench: east %s, west %s, data %s, %zu B messages\n",
              east.address().c_str(), west.address().c_str(), root.c_str(), f.size);

  // 1. West's own append rate, then east's load replicated to west.
  const kf::bench::LoadResult own = Load(west.address(), "west", f);
  const double own_rate = own.messages / own.seconds;
  const kf::bench::LoadResult primary = Load(east.address(), "east", f);
  uint64_t marker[kPChannels];
  {
    auto client = kingfisher::Client::Connect({.endpoint = east.address()});
    auto producer = *(*client)->CreateProducer();
    for (int i = 0; i < kPChannels; ++i) {
      auto r = producer->AppendSync({.type = kingfisher::MessageType::kInsert,
                                     .vchannel = "east-dml_" + std::to_string(i) + "_bench",
                                     .payload = "marker"});
      if (!r.ok()) Die("marker: " + r.status().ToString());
      marker[i] = r->timetick.value();
    }
  }
  Configure(east.address(), west.address());
  // From the configuration in force on east: its replicators start within the manager's
  // interval (500 ms), which this counts against the apply rate.
  const Clock::time_point first = Clock::now();
  auto west_replicate = Replicate(west.address());
  Clock::time_point done{};
  for (const auto give_up = Clock::now() + std::chrono::minutes(5);;) {
    bool all = true;
    for (int i = 0; i < kPChannels; ++i) all = all && CheckpointOf(*west_replicate, i) >= marker[i];
    if (all) {
      done = Clock::now();
      break;
    }
    if (Clock::now() > give_up) Die("west did not catch up within 5 minutes");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polling period
  }
  const uint64_t applied = primary.messages + 20 * f.producers + kPChannels;  // + warm-ups
  const double apply_rate = applied / Seconds(done - first);
  std::printf("\nphase 1: %" PRIu64 " messages of %zu B, %d producers\n", f.messages, f.size,
              f.producers);
  std::printf("  west's own appends        %9.0f msgs/s  (baseline)\n", own_rate);
  std::printf("  east's own appends        %9.0f msgs/s\n", primary.messages / primary.seconds);
  std::printf("  west applying east's      %9.0f msgs/s  = %.2f of west's own (bar >= 0.8)\n",
              apply_rate, apply_rate / own_rate);

  // 2. Lag at a fixed rate.
  const LagResult lag = Lag(east.address(), west.address(), f);
  const kf::bench::Quantiles ack = kf::bench::Summarize(lag.ack);
  const kf::bench::Quantiles rep = kf::bench::Summarize(lag.lag);
  std::printf("\nphase 2: %.0f msgs/s of %zu B for %.0f s (%" PRIu64
              " sends found the window full)\n",
              f.rate, f.size, f.seconds, lag.late);
  std::printf("  east append -> ack        p50 %7.3f ms  p99 %7.3f ms  (baseline)\n", ack.p50 * 1e3,
              ack.p99 * 1e3);
  std::printf("  east ack -> west delivery p50 %7.3f ms  p99 %7.3f ms  (%zu messages)\n",
              rep.p50 * 1e3, rep.p99 * 1e3, rep.count);
  east.Stop();
  west.Stop();
  return 0;
}
