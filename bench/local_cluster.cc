#include "local_cluster.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bench_util.h"

namespace kf::bench {
namespace {

// Creates `dir` and returns it: EtcdProcess makes its temp dir inside, so it must exist first.
const std::string& Created(const std::string& dir) {
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

LocalCluster::LocalCluster(LocalClusterOptions options)
    : options_(std::move(options)), etcd_(Created(options_.dir)) {
  if (absl::Status s = etcd_.Start(); !s.ok()) Die("etcd: " + s.ToString());
  char ttl[32];
  std::snprintf(ttl, sizeof(ttl), "%g", options_.lease_ttl);
  const std::vector<std::string> common = {"--etcd",      etcd_.endpoint(),
                                           "--cluster",   options_.cluster,
                                           "--pchannels", std::to_string(options_.pchannels),
                                           "--lease-ttl", ttl};
  // Rebalancing moves are one per --balance-interval (default 10 s): 1 s lets a restarted node
  // get its share back quickly between failover trials.
  std::vector<std::string> coord_args = common;
  coord_args.insert(coord_args.end(), {"--balance-interval", "1"});
  coord_ = std::make_unique<testing::ServerProcess>(testing::ServerProcess::Options{
      .data_dir = options_.dir + "/coord", .extra_args = coord_args, .role = "coord"});
  if (!coord_->Start()) Die("coordinator did not start:\n" + coord_->Output());
  for (int64_t id = 1; id <= options_.nodes; ++id) {
    std::vector<std::string> args = common;
    args.insert(args.end(), {"--node-id", std::to_string(id)});
    nodes_[id] = std::make_unique<testing::ServerProcess>(testing::ServerProcess::Options{
        .data_dir = options_.dir + "/data", .extra_args = args, .role = "node"});
    if (!nodes_[id]->Start())
      Die(absl::StrCat("node ", id, " did not start:\n", nodes_[id]->Output()));
  }
  kingfisher::ClientOptions client_options;
  client_options.endpoint = coord_->address();
  // Failover trials wait for a moved pchannel within one append: far above a lease TTL.
  client_options.append_timeout = std::chrono::seconds(60);
  auto client = kingfisher::Client::Connect(client_options);
  if (!client.ok()) Die("connect: " + client.status().ToString());
  client_ = *std::move(client);
}

LocalCluster::~LocalCluster() {
  client_.reset();
  for (auto& [id, node] : nodes_) node->Kill();
  coord_->Kill();
  etcd_.Kill();
}

std::vector<std::string> LocalCluster::PChannels() const {
  std::vector<std::string> out;
  for (int i = 0; i < options_.pchannels; ++i) {
    out.push_back(absl::StrCat(options_.cluster, "-dml_", i));
  }
  return out;
}

bool LocalCluster::WaitSteady(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    auto status = client_->GetStatus();
    if (status.ok()) {
      std::map<int64_t, int> load;  // online node -> pchannels it owns
      for (const auto& n : status->nodes) {
        if (n.state == "ONLINE") load[n.id] = 0;
      }
      bool assigned = static_cast<int>(status->pchannels.size()) == options_.pchannels;
      for (const auto& p : status->pchannels) {
        assigned = assigned && p.state == "ASSIGNED" && load.contains(p.node);
        if (load.contains(p.node)) ++load[p.node];
      }
      if (assigned && static_cast<int>(load.size()) == options_.nodes) {
        auto [lo, hi] = std::minmax_element(load.begin(), load.end(),
                                            [](auto& a, auto& b) { return a.second < b.second; });
        if (hi->second - lo->second <= 1) return true;
      }
    }
    absl::SleepFor(absl::Milliseconds(20));  // polling the coordinator's view, bounded above
  }
  return false;
}

void LocalCluster::KillNode(int64_t id) { nodes_.at(id)->Kill(); }

bool LocalCluster::RestartNode(int64_t id) { return nodes_.at(id)->Start(); }

}  // namespace kf::bench
