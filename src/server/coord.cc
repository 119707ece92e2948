#include "server/coord.h"

#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/str_join.h"
#include "rpc/rpc_server.h"
#include "server/advertise.h"
#include "server/credentials.h"
#include "server/http_server.h"
#include "spdlog/spdlog.h"
#include "storage/meta/etcd_meta_store.h"
#include "streaming/coord/coordinator.h"
#include "streaming/coord/ddl_host.h"
#include "streaming/ddl/producer_appender.h"

namespace kf::server {
namespace {

constexpr int kConfigError = 2;
constexpr absl::Duration kConnectTimeout = absl::Seconds(5);
constexpr absl::Duration kConnectBackoffMax = absl::Seconds(5);

}  // namespace

int RunCoord(const ServerConfig& config, ShutdownSignals* signals) {
  absl::StatusOr<ServerCredentialSet> credentials = LoadCredentials(config);
  if (!credentials.ok()) {
    spdlog::critical("kingfisher failed to start: {}", std::string(credentials.status().message()));
    return 1;
  }
  absl::StatusOr<meta::EtcdMetaStore::Options> etcd_options = EtcdOptions(config);
  if (!etcd_options.ok()) {
    spdlog::critical("kingfisher failed to start: {}",
                     std::string(etcd_options.status().message()));
    return 1;
  }
  auto store = meta::EtcdMetaStore::Create(*std::move(etcd_options));
  if (!store.ok()) {
    spdlog::critical("kingfisher failed to start: --etcd '{}': {}", config.etcd,
                     std::string(store.status().message()));
    return kConfigError;
  }

  auto http = HttpServer::Start(config.http_listen);
  if (!http.ok()) {
    spdlog::critical("kingfisher failed to start: {}", std::string(http.status().message()));
    return 1;
  }

  // DDL (docs/ddl.md): a fresh broadcaster + catalog per acting term; the copies go out
  // through a client of this process's own address (the nodes are found by discovery).
  streaming::ddl::ProducerAppender appender(
      kingfisher::ClientOptions{.tls = credentials->peer_tls});
  streaming::DdlHost::Options ddl_options;
  ddl_options.cluster = config.cluster;
  ddl_options.pchannels = config.PChannelNames();
  streaming::DdlHost ddl(store->get(), &appender, ddl_options);

  streaming::Coordinator::Options options;
  options.cluster = config.cluster;
  options.pchannels = config.PChannelNames();
  options.lease_ttl = absl::Seconds(config.lease_ttl);
  options.balance_interval = absl::Seconds(config.balance_interval);
  options.on_acting = [&ddl](int64_t revision) { ddl.TakeOffice(revision); };
  options.on_not_acting = [&ddl] { ddl.LeaveOffice(); };
  std::unique_ptr<streaming::Coordinator> coordinator;
  absl::Duration backoff = absl::Milliseconds(200);
  for (int attempt = 1; coordinator == nullptr; ++attempt) {
    auto created =
        streaming::Coordinator::Create(store->get(), options, absl::Now() + kConnectTimeout);
    if (created.ok()) {
      coordinator = *std::move(created);
      break;
    }
    spdlog::error("cannot reach etcd at {} (attempt {}): {}; retrying in {}", config.etcd, attempt,
                  created.status().ToString(), absl::FormatDuration(backoff));
    if (signals->ShutdownRequestedWithin(backoff)) {
      spdlog::info("shutdown requested before etcd was reached; kingfisher stopped");
      http->get()->Stop();
      return 0;
    }
    backoff = std::min(backoff * 2, kConnectBackoffMax);
  }

  rpc::RpcServerOptions rpc_options;
  rpc_options.listen = config.listen;
  rpc_options.credentials = credentials->listener;
  rpc_options.coord.view = coordinator->view();
  rpc_options.coord.oracle = coordinator->oracle();
  rpc_options.collections.ddl = &ddl;
  auto rpc = rpc::RpcServer::Start(std::move(rpc_options));
  if (!rpc.ok()) {
    spdlog::critical("kingfisher failed to start: {}", std::string(rpc.status().message()));
    return 1;
  }
  const std::string address = AdvertisedAddress(config.advertise_address, (*rpc)->address());
  if (absl::Status st = appender.Open(address); !st.ok()) {
    spdlog::critical("kingfisher failed to start: {}", st.ToString());
    return 1;
  }
  coordinator->Start(address);
  // Serving: discovery and status answer whether this coordinator acts or stands by (DDL
  // answers UNAVAILABLE until this one acts and recovered its tasks).
  (*http)->SetHealth(Health::kServing, "");
  spdlog::info(
      "kingfisher started role=coord listen={} http_listen={} etcd={} cluster={} pchannels={} "
      "lease_ttl={}s balance_interval={}s",
      (*rpc)->address(), (*http)->address(), config.etcd, config.cluster,
      absl::StrJoin(options.pchannels, ","), config.lease_ttl, config.balance_interval);

  const int sig = signals->WaitForShutdown();
  spdlog::info("shutdown requested signal={}: stepping down", sig);
  (*http)->SetHealth(Health::kStopping, "stepping down");
  coordinator->Stop();  // revokes the lease first: a standby takes over at once
  (*rpc)->Shutdown(absl::Seconds(config.shutdown_grace_seconds));
  // The term ended with Stop; join its broadcaster before closing the producer it uses.
  ddl.Stop();
  appender.Close();
  (*http)->Stop();
  rpc->reset();  // before the coordinator whose view and oracle it serves
  coordinator.reset();
  spdlog::info("kingfisher stopped");
  return 0;
}

}  // namespace kf::server
