#include "in_process_wals.h"

#include <filesystem>
#include <utility>

#include "bench_util.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "streaming/node/local_wal_transport.h"
#include "wal/backends/local/local_opener.h"

namespace kf::bench {

InProcessWals::InProcessWals(const std::string& dir, const std::vector<std::string>& pchannels) {
  std::filesystem::create_directories(dir);
  auto tso = TimestampAllocator::Open(dir + "/tso", {});
  if (!tso.ok()) Die("tso: " + tso.status().ToString());
  tso_ = *std::move(tso);
  wal::local::LocalOpenerOptions opener_options;
  opener_options.root = dir + "/wal";
  opener_ = wal::local::NewLocalOpener(opener_options);
  for (const std::string& pchannel : pchannels) {
    auto backend = opener_->Open(wal::OpenOptions{.pchannel = pchannel, .term = Term(1)});
    if (!backend.ok()) Die("open WAL " + pchannel + ": " + backend.status().ToString());
    wal::WalOptions options;
    options.pchannel = pchannel;
    options.tso = tso_.get();
    auto w = wal::OpenWal(std::move(options), *std::move(backend));
    if (!w.ok()) Die("recover WAL " + pchannel + ": " + w.status().ToString());
    wals_[pchannel] = std::shared_ptr<wal::Wal>(*std::move(w));
  }

  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&no_discovery_);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port == 0) Die("cannot start the discovery stub server");

  kingfisher::ClientOptions options;
  options.endpoint = "127.0.0.1:" + std::to_string(port);
  auto client = streaming::node::ConnectInProcess(
      options, [this](const std::string& pchannel, int64_t) -> std::shared_ptr<wal::Wal> {
        auto it = wals_.find(pchannel);
        return it == wals_.end() ? nullptr : it->second;
      });
  if (!client.ok()) Die("in-process client: " + client.status().ToString());
  client_ = *std::move(client);
}

InProcessWals::~InProcessWals() {
  client_.reset();
  server_->Shutdown();
  for (auto& [name, w] : wals_) w->Close();
}

}  // namespace kf::bench
