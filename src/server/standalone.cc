#include "server/standalone.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/absl_compat.h"
#include "query/query_metrics.h"
#include "query/query_registry.h"
#include "replicate/ddl_pieces.h"
#include "replicate/replicate_manager.h"
#include "rpc/rpc_server.h"
#include "server/advertise.h"
#include "server/credentials.h"
#include "server/data_dir.h"
#include "server/http_server.h"
#include "server/query_setup.h"
#include "server/wal_opener.h"
#include "spdlog/spdlog.h"
#include "storage/meta/embedded_meta_store.h"
#include "streaming/coord/coordinator.h"
#include "streaming/coord/ddl_host.h"
#include "streaming/ddl/producer_appender.h"
#include "streaming/node/streaming_node.h"
#include "streaming/node/wal_registry.h"
#include "streaming/node/wal_registry_metrics.h"
#include "trace/env.h"

namespace kf::server {
namespace {

constexpr int64_t kStandaloneNodeId = 1;
// Bounds each metadata step of startup (the embedded store answers at once unless broken).
constexpr absl::Duration kStartTimeout = absl::Seconds(30);

// Everything the server opened, in the order it must be torn down (reverse of members).
struct Standalone {
  std::unique_ptr<DataDir> data_dir;
  trace::TracingHandle tracing;
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<meta::EmbeddedMetaStore> store;
  // The DDL appends go through this process's own Produce service (ddl_host.h).
  std::unique_ptr<streaming::ddl::ProducerAppender> appender;
  std::unique_ptr<streaming::DdlHost> ddl;  // lives per coordinator term; borrows the above
  std::unique_ptr<streaming::Coordinator> coordinator;
  WalStorage wal;
  std::unique_ptr<streaming::node::DynamicWalRegistry> registry;
  std::unique_ptr<object::ObjectStore> segments;     // sealed segments (recovery storage)
  std::unique_ptr<query::QueryRegistry> queries;     // the shards of the WALs the node opens
  std::unique_ptr<replicate::DdlPieces> ddl_pieces;  // over `store`
  std::unique_ptr<replicate::ReplicateManager> replicators;  // reads the registry's WALs
  std::unique_ptr<rpc::RpcServer> rpc;
  std::unique_ptr<streaming::StreamingNode> node;
  std::vector<metrics::CallbackHandle> gauges;  // over `registry`: unregistered before it goes
  std::vector<metrics::CallbackHandle> query_gauges;  // over `queries`: unregistered before it
};

// True when every pchannel is ASSIGNED (confirmed by the node that opened it).
bool AllAssigned(const streaming::AssignmentSnapshot& s, size_t n) {
  size_t assigned = 0;
  for (const auto& [name, p] : s.pchannels) {
    assigned += p.assignment.state() == kingfisher::v1::PCHANNEL_ASSIGNED ? 1 : 0;
  }
  return assigned == n;
}

// Waits until the node serves every pchannel and has confirmed it (recovery may take long:
// progress is logged).
absl::Status WaitServing(const ServerConfig& config, ShutdownSignals* signals, Standalone* s) {
  const size_t n = config.PChannelNames().size();
  const absl::Time start = absl::Now();
  for (;;) {
    absl::Status st = s->node->WaitServing(n, absl::Now() + absl::Seconds(5));
    if (!absl::IsDeadlineExceeded(st)) {
      if (!st.ok()) return st;
      break;
    }
    if (signals->ShutdownRequestedWithin(absl::ZeroDuration())) {
      return absl::CancelledError("shutdown requested during startup");
    }
    spdlog::info("waiting for the WALs to open ({}; {} so far)", std::string(st.message()),
                 absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Seconds(1))));
  }
  const streaming::AssignmentView* view = s->coordinator->view();
  const absl::Time deadline = absl::Now() + kStartTimeout;
  for (auto snapshot = view->Current(); !AllAssigned(*snapshot, n);
       snapshot = view->WaitNewer(snapshot->version, deadline)) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError("the pchannels were opened but not confirmed ASSIGNED");
    }
  }
  return absl::OkStatus();
}

// Waits until the DDL of the coordinator's term recovered (the catalog serves).
absl::Status WaitDdl(ShutdownSignals* signals, Standalone* s) {
  const absl::Time deadline = absl::Now() + kStartTimeout;
  while (!s->ddl->WaitServing(std::min(deadline, absl::Now() + absl::Seconds(1)))) {
    if (signals->ShutdownRequestedWithin(absl::ZeroDuration())) {
      return absl::CancelledError("shutdown requested during startup");
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("DDL did not recover: ", s->ddl->catalog().status().message()));
    }
  }
  return absl::OkStatus();
}

absl::Status Open(const ServerConfig& config, ShutdownSignals* signals, const ServerHooks& hooks,
                  Standalone* s) {
  absl::StatusOr<ServerCredentialSet> credentials = LoadCredentials(config);
  if (!credentials.ok()) return credentials.status();
  auto dir = DataDir::Open(config.data_dir, kStandaloneNodeId,
                           DataDir::Identity{config.cluster, config.pchannels});
  if (!dir.ok()) return dir.status();
  s->data_dir = *std::move(dir);

  // Before the WALs, so /healthz answers (503 "starting") while they recover; after the data
  // dir lock, so a second server on the same dir reports the lock, not the port.
  auto http = HttpServer::Start(config.http_listen);
  if (!http.ok()) return http.status();
  s->http = *std::move(http);

  auto store = meta::EmbeddedMetaStore::Open(s->data_dir->meta_dir(), {});
  if (!store.ok()) {
    return absl::Status(
        store.status().code(),
        absl::StrCat("metadata store ", s->data_dir->meta_dir(), ": ", store.status().message()));
  }
  s->store = *std::move(store);

  // DDL (docs/ddl.md): one DdlHost, a fresh broadcaster + catalog per coordinator term.
  s->appender = std::make_unique<streaming::ddl::ProducerAppender>(
      kingfisher::ClientOptions{.tls = credentials->peer_tls});
  streaming::DdlHost::Options ddl;
  ddl.cluster = config.cluster;
  ddl.pchannels = config.PChannelNames();
  s->ddl = std::make_unique<streaming::DdlHost>(s->store.get(), s->appender.get(), ddl);

  // The coordinator and the one streaming node of docs/cluster.md, over the embedded store.
  streaming::Coordinator::Options coord;
  coord.cluster = config.cluster;
  coord.pchannels = config.PChannelNames();
  coord.lease_ttl = absl::Seconds(config.lease_ttl);
  coord.balance_interval = absl::Seconds(config.balance_interval);
  coord.exclusive = true;  // the data-dir lock rules out a second coordinator
  streaming::DdlHost* host = s->ddl.get();
  coord.on_acting = [host](int64_t revision) { host->TakeOffice(revision); };
  coord.on_not_acting = [host] { host->LeaveOffice(); };
  auto coordinator =
      streaming::Coordinator::Create(s->store.get(), coord, absl::Now() + kStartTimeout);
  if (!coordinator.ok()) return coordinator.status();
  s->coordinator = *std::move(coordinator);

  auto wal = OpenWalStorage(config, s->data_dir->wal_dir(), s->store.get(), credentials->peers);
  if (!wal.ok()) return wal.status();
  s->wal = *std::move(wal);
  s->wal.opener = WithOpenHook(std::move(s->wal.opener), hooks.before_wal_open);
  s->registry = std::make_unique<streaming::node::DynamicWalRegistry>(config.PChannelNames());
  auto segments = OpenSegmentStore(config, s->data_dir->root() + "/objects");
  if (!segments.ok()) return segments.status();
  s->segments = *std::move(segments);
  s->queries =
      MakeQueryRegistry(config, s->coordinator->oracle(), s->segments.get(), s->store.get());
  s->query_gauges = query::RegisterQueryGauges(metrics::DefaultRegistry(), s->queries.get());

  s->ddl_pieces = std::make_unique<replicate::DdlPieces>(s->store.get(), config.cluster);
  s->replicators = std::make_unique<replicate::ReplicateManager>(
      s->registry.get(),
      replicate::ReplicateManager::Options{.cluster_id = config.cluster,
                                           .ddl_pieces = s->ddl_pieces.get(),
                                           .peer_credentials = credentials->peers});

  rpc::RpcServerOptions rpc_options;
  rpc_options.listen = config.listen;
  rpc_options.credentials = credentials->listener;
  rpc_options.max_message_bytes = config.max_payload_bytes + kMessageHeadroomBytes;
  rpc_options.wal_registry = s->registry.get();
  rpc_options.replicate.cluster_id = config.cluster;
  rpc_options.replicate.manager = s->replicators.get();
  rpc_options.replicate.ddl_pieces = s->ddl_pieces.get();
  rpc_options.coord.view = s->coordinator->view();
  rpc_options.coord.oracle = s->coordinator->oracle();
  rpc_options.coord.node_id = kStandaloneNodeId;
  rpc_options.coord.registry = s->registry.get();
  rpc_options.node.max_payload_bytes = config.max_payload_bytes;
  rpc_options.node.after_durable = hooks.after_durable;
  rpc_options.collections.ddl = s->ddl.get();
  rpc_options.search.queries = s->queries.get();
  rpc_options.coord.queries = s->queries.get();
  auto rpc = rpc::RpcServer::Start(std::move(rpc_options));
  if (!rpc.ok()) return rpc.status();
  s->rpc = *std::move(rpc);
  const std::string address = AdvertisedAddress(config.advertise_address, s->rpc->address());
  if (absl::Status st = s->appender->Open(address); !st.ok()) return st;

  s->coordinator->Start(address);
  if (!s->coordinator->WaitActing(true, absl::Now() + kStartTimeout)) {
    return absl::UnavailableError("the coordinator did not take office (see the log above)");
  }
  streaming::StreamingNode::Options node;
  node.node_id = kStandaloneNodeId;
  node.address = address;
  node.cluster = config.cluster;
  node.pchannels = config.PChannelNames();
  node.opener = s->wal.opener.get();
  node.view = s->coordinator->view();
  node.registry = s->registry.get();
  node.queries = s->queries.get();
  node.wal.tso = s->coordinator->oracle();
  node.wal.cluster_id = config.cluster;
  ApplyMessageLimits(config, &node.wal);
  ConnectWalToQueries(s->queries.get(), &node.wal);
  node.lease_ttl = absl::Seconds(config.lease_ttl);
  auto started = streaming::StreamingNode::Start(s->store.get(), node, absl::Now() + kStartTimeout);
  if (!started.ok()) return started.status();
  s->node = *std::move(started);
  s->gauges = streaming::node::RegisterWalGauges(metrics::DefaultRegistry(), s->registry.get(),
                                                 kStandaloneNodeId);
  if (absl::Status st = WaitServing(config, signals, s); !st.ok()) return st;
  return WaitDdl(signals, s);
}

void Close(const ServerConfig& config, Standalone* s) {
  // The HTTP port stays up to the end, so /healthz says why the server no longer serves.
  if (s->http) s->http->SetHealth(Health::kStopping, "shutting down");
  if (s->rpc) s->rpc->Shutdown(absl::Seconds(config.shutdown_grace_seconds));
  spdlog::debug("shutdown: rpc stopped");
  s->replicators.reset();
  // The broadcaster's workers before the producer they append through; unfinished DDL
  // resumes at the next start.
  if (s->ddl) s->ddl->Stop();
  if (s->appender) s->appender->Close();
  spdlog::debug("shutdown: ddl stopped");
  // The coordinator first: the node's lease revocation must not move the pchannels (a restart
  // finds them assigned to node 1 at the same term).
  if (s->coordinator) s->coordinator->Stop();
  s->gauges.clear();
  s->query_gauges.clear();
  s->node.reset();  // closes every WAL (the backend drains), revokes the lease
  spdlog::debug("shutdown: wals closed");
  if (s->http) s->http->Stop();
  spdlog::debug("shutdown: http stopped");
  s->tracing.Shutdown(absl::Seconds(5));
}

}  // namespace

int RunStandalone(const ServerConfig& config, ShutdownSignals* signals, const ServerHooks& hooks) {
  Standalone s;
  s.tracing = trace::InitTracingFromEnv("kingfisher");
  if (absl::Status st = Open(config, signals, hooks, &s); !st.ok()) {
    if (absl::IsCancelled(st)) {
      spdlog::info("kingfisher stopped before it started: {}", std::string(st.message()));
      Close(config, &s);
      return 0;
    }
    spdlog::critical("kingfisher failed to start: {}", std::string(st.message()));
    Close(config, &s);
    return 1;
  }
  s.http->SetHealth(Health::kServing, "");
  std::vector<std::string> pchannels;
  for (const auto& p : s.registry->List()) {
    pchannels.push_back(absl::StrCat(p.pchannel, "@", p.term.value()));
  }
  spdlog::info(
      "kingfisher started role=standalone listen={} http_listen={} data_dir={} cluster={} "
      "pchannels={} wal_backend={} max_payload_bytes={} tracing_export={} ddl=recovered",
      s.rpc->address(), s.http->address(), config.data_dir, config.cluster,
      absl::StrJoin(pchannels, ","), config.wal_backend, config.max_payload_bytes,
      s.tracing.exporting());

  const int sig = signals->WaitForShutdown();
  spdlog::info("shutdown requested signal={}: draining in-flight appends", sig);
  Close(config, &s);
  spdlog::info("kingfisher stopped");
  return 0;
}

}  // namespace kf::server
