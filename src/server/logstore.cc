#include "server/logstore.h"

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "logstore/service/logstore_server.h"
#include "logstore/service/registration.h"
#include "server/advertise.h"
#include "server/credentials.h"
#include "server/http_server.h"
#include "spdlog/spdlog.h"
#include "storage/meta/etcd_meta_store.h"
#include "storage/object/object_store_url.h"

namespace kf::server {
namespace {

struct LogStoreProcess {
  std::unique_ptr<object::ObjectStore> objects;
  std::unique_ptr<meta::EtcdMetaStore> etcd;
  std::unique_ptr<logstore::LogStoreServer> server;
  std::unique_ptr<logstore::Registration> registration;
  std::unique_ptr<HttpServer> http;
};

absl::Status Open(const ServerConfig& config, LogStoreProcess* p) {
  absl::StatusOr<ServerCredentialSet> credentials = LoadCredentials(config);
  if (!credentials.ok()) return credentials.status();
  if (!config.object_store.empty()) {
    auto objects = object::OpenObjectStoreUrl(config.object_store, absl::Now() + absl::Seconds(30));
    if (!objects.ok()) return objects.status();
    p->objects = *std::move(objects);
  }
  logstore::LogStoreServerOptions options;
  options.listen = config.listen;
  options.credentials = credentials->listener;
  options.data_dir = config.data_dir + "/logstore";
  options.object_store = p->objects.get();
  options.object_prefix = absl::StrCat(config.cluster, "/wal/quorum");
  options.max_message_bytes = config.max_payload_bytes + kMessageHeadroomBytes + (4u << 20);
  auto server = logstore::LogStoreServer::Start(options);
  if (!server.ok()) return server.status();
  p->server = *std::move(server);
  auto http = HttpServer::Start(config.http_listen);
  if (!http.ok()) return http.status();
  p->http = *std::move(http);
  if (!config.etcd.empty()) {
    absl::StatusOr<meta::EtcdMetaStore::Options> etcd = EtcdOptions(config);
    if (!etcd.ok()) return etcd.status();
    auto store = meta::EtcdMetaStore::Create(*std::move(etcd));
    if (!store.ok()) return store.status();
    p->etcd = *std::move(store);
    const std::string address = AdvertisedAddress(config.advertise_address, p->server->address());
    auto reg = logstore::Registration::Start(
        p->etcd.get(), absl::StrCat("kf/", config.cluster, "/logstores/", address), address,
        absl::Seconds(config.lease_ttl));
    if (!reg.ok()) return reg.status();
    p->registration = *std::move(reg);
  }
  return absl::OkStatus();
}

void Close(LogStoreProcess* p) {
  p->registration.reset();  // writers stop choosing it first
  if (p->http) p->http->Stop();
  if (p->server) p->server->Shutdown(absl::Seconds(2));
}

}  // namespace

int RunLogStore(const ServerConfig& config, ShutdownSignals* signals) {
  LogStoreProcess p;
  if (absl::Status s = Open(config, &p); !s.ok()) {
    spdlog::critical("kingfisher logstore failed to start: {}", std::string(s.message()));
    Close(&p);
    return 1;
  }
  p.http->SetHealth(Health::kServing, "");
  spdlog::info(
      "kingfisher started role=logstore listen={} http_listen={} data_dir={} cluster={} etcd={} "
      "object_store={}",
      p.server->address(), p.http->address(), config.data_dir, config.cluster, config.etcd,
      config.object_store);
  const int sig = signals->WaitForShutdown();
  spdlog::info("shutdown requested signal={}", sig);
  p.http->SetHealth(Health::kStopping, "stopping");
  Close(&p);
  spdlog::info("kingfisher logstore stopped");
  return 0;
}

}  // namespace kf::server
