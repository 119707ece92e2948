#include "server/node.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "query/query_metrics.h"
#include "query/query_registry.h"
#include "replicate/ddl_pieces.h"
#include "replicate/replicate_manager.h"
#include "rpc/coord_tso_fetcher.h"
#include "rpc/rpc_server.h"
#include "server/advertise.h"
#include "server/credentials.h"
#include "server/data_dir.h"
#include "server/http_server.h"
#include "server/query_setup.h"
#include "server/wal_opener.h"
#include "spdlog/spdlog.h"
#include "storage/meta/etcd_meta_store.h"
#include "streaming/assignment_view.h"
#include "streaming/node/batched_timestamp_source.h"
#include "streaming/node/streaming_node.h"
#include "streaming/node/wal_registry.h"
#include "streaming/node/wal_registry_metrics.h"
#include "trace/env.h"

namespace kf::server {
namespace {

// Everything the node opened, in the order it must be torn down (reverse of members).
struct Node {
  std::unique_ptr<DataDir> data_dir;
  trace::TracingHandle tracing;
  std::unique_ptr<meta::EtcdMetaStore> store;
  std::unique_ptr<streaming::AssignmentView> view;
  std::unique_ptr<rpc::CoordTsoFetcher> tso_fetcher;
  std::unique_ptr<streaming::BatchedTimestampSource> tso;        // the WALs' timeticks
  std::unique_ptr<streaming::OracleTimestampSource> strong_tso;  // strong searches' timestamps
  WalStorage wal;
  std::unique_ptr<streaming::node::DynamicWalRegistry> registry;
  std::unique_ptr<object::ObjectStore> segments;  // sealed segments (recovery storage)
  std::unique_ptr<query::QueryRegistry> queries;  // the shards of the WALs it opens
  std::vector<metrics::CallbackHandle> gauges;    // over `registry`: unregistered before it goes
  std::vector<metrics::CallbackHandle> query_gauges;  // over `queries`: unregistered before it
  std::unique_ptr<replicate::DdlPieces> ddl_pieces;   // over `store`
  std::unique_ptr<replicate::ReplicateManager> replicators;  // reads the registry's WALs
  std::unique_ptr<rpc::RpcServer> rpc;
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<streaming::StreamingNode> node;
};

// Retries `attempt` with backoff until it succeeds or a shutdown signal arrives (false then).
template <typename F>
bool RetryUntilUp(std::string_view what, ShutdownSignals* signals, F attempt) {
  absl::Duration backoff = absl::Milliseconds(200);
  for (int n = 1;; ++n) {
    absl::Status s = attempt();
    if (s.ok()) return true;
    spdlog::warn("{} failed (attempt {}): {}; retrying in {}", std::string(what), n, s.ToString(),
                 absl::FormatDuration(backoff));
    if (signals->ShutdownRequestedWithin(backoff)) return false;
    backoff = std::min(backoff * 2, absl::Seconds(5));
  }
}

absl::Status Open(const ServerConfig& config, ShutdownSignals* signals, Node* n) {
  if (config.node_id <= 0) {
    return absl::InvalidArgumentError("run node needs --node-id N (N >= 1, unique in the cluster)");
  }
  if (config.etcd.empty()) return absl::InvalidArgumentError("run node needs --etcd URL[,URL...]");
  absl::StatusOr<ServerCredentialSet> credentials = LoadCredentials(config);
  if (!credentials.ok()) return credentials.status();
  auto dir = DataDir::Open(config.data_dir, config.node_id,
                           DataDir::Identity{config.cluster, config.pchannels});
  if (!dir.ok()) return dir.status();
  n->data_dir = *std::move(dir);

  absl::StatusOr<meta::EtcdMetaStore::Options> etcd = EtcdOptions(config);
  if (!etcd.ok()) return etcd.status();
  auto store = meta::EtcdMetaStore::Create(*std::move(etcd));
  if (!store.ok()) return store.status();
  n->store = *std::move(store);

  const streaming::ClusterKeys keys(config.cluster);
  if (!RetryUntilUp("listing the cluster's assignments in etcd", signals, [&] {
        auto view = streaming::AssignmentView::Start(n->store.get(), keys, {},
                                                     absl::Now() + absl::Seconds(5));
        if (view.ok()) n->view = *std::move(view);
        return view.status();
      })) {
    return absl::CancelledError("shutdown requested during startup");
  }
  n->tso_fetcher = std::make_unique<rpc::CoordTsoFetcher>(n->view.get(), credentials->peers);
  n->tso = std::make_unique<streaming::BatchedTimestampSource>(
      n->tso_fetcher.get(), streaming::BatchedTimestampSource::Options{});

  auto wal = OpenWalStorage(config, n->data_dir->wal_dir(), n->store.get(), credentials->peers);
  if (!wal.ok()) return wal.status();
  n->wal = *std::move(wal);
  n->registry = std::make_unique<streaming::node::DynamicWalRegistry>(config.PChannelNames());
  n->strong_tso = std::make_unique<streaming::OracleTimestampSource>(n->tso_fetcher.get());
  // A node's sealed segments must be readable by whichever node opens the pchannel next: only
  // a shared object store will do.
  auto segments = OpenSegmentStore(config, "");
  if (!segments.ok()) return segments.status();
  n->segments = *std::move(segments);
  n->queries = MakeQueryRegistry(config, n->strong_tso.get(), n->segments.get(), n->store.get(),
                                 [tso = n->tso.get()](TimeTick t) { tso->DropBatchBelow(t); });
  n->query_gauges = query::RegisterQueryGauges(metrics::DefaultRegistry(), n->queries.get());
  // This node's own view (what it serves right now), so an operator sees on each node's
  // /metrics when it stopped serving a pchannel it lost.
  n->gauges = streaming::node::RegisterWalGauges(metrics::DefaultRegistry(), n->registry.get(),
                                                 config.node_id);

  n->ddl_pieces = std::make_unique<replicate::DdlPieces>(n->store.get(), config.cluster);
  n->replicators = std::make_unique<replicate::ReplicateManager>(
      n->registry.get(),
      replicate::ReplicateManager::Options{.cluster_id = config.cluster,
                                           .ddl_pieces = n->ddl_pieces.get(),
                                           .peer_credentials = credentials->peers});

  rpc::RpcServerOptions rpc_options;
  rpc_options.listen = config.listen;
  rpc_options.credentials = credentials->listener;
  rpc_options.max_message_bytes = config.max_payload_bytes + kMessageHeadroomBytes;
  rpc_options.wal_registry = n->registry.get();
  rpc_options.replicate.cluster_id = config.cluster;
  rpc_options.replicate.manager = n->replicators.get();
  rpc_options.replicate.ddl_pieces = n->ddl_pieces.get();
  rpc_options.node.max_payload_bytes = config.max_payload_bytes;
  // Discovery and status from the node's own view: clients may bootstrap from any node.
  rpc_options.coord.view = n->view.get();
  rpc_options.coord.node_id = config.node_id;
  rpc_options.coord.registry = n->registry.get();
  rpc_options.search.queries = n->queries.get();
  rpc_options.coord.queries = n->queries.get();
  auto rpc = rpc::RpcServer::Start(std::move(rpc_options));
  if (!rpc.ok()) return rpc.status();
  n->rpc = *std::move(rpc);

  auto http = HttpServer::Start(config.http_listen);
  if (!http.ok()) return http.status();
  n->http = *std::move(http);

  streaming::StreamingNode::Options node;
  node.node_id = config.node_id;
  node.address = AdvertisedAddress(config.advertise_address, n->rpc->address());
  node.cluster = config.cluster;
  node.pchannels = config.PChannelNames();
  node.opener = n->wal.opener.get();
  node.view = n->view.get();
  node.registry = n->registry.get();
  node.queries = n->queries.get();
  node.wal.tso = n->tso.get();
  node.wal.cluster_id = config.cluster;
  ApplyMessageLimits(config, &node.wal);
  ConnectWalToQueries(n->queries.get(), &node.wal);
  node.lease_ttl = absl::Seconds(config.lease_ttl);
  if (!RetryUntilUp("registering the node in etcd", signals, [&] {
        auto started =
            streaming::StreamingNode::Start(n->store.get(), node, absl::Now() + absl::Seconds(5));
        if (started.ok()) n->node = *std::move(started);
        return started.status();
      })) {
    return absl::CancelledError("shutdown requested during startup");
  }
  return absl::OkStatus();
}

void Close(const ServerConfig& config, Node* n) {
  if (n->node != nullptr) {
    absl::Status drained = n->node->Drain(absl::Now() + absl::Seconds(config.drain_timeout));
    if (!drained.ok()) spdlog::warn("shutdown: drain incomplete: {}", drained.ToString());
  }
  if (n->http) n->http->Stop();
  if (n->rpc) n->rpc->Shutdown(absl::Seconds(config.shutdown_grace_seconds));
  n->replicators.reset();
  n->node.reset();  // closes what is still open, revokes the lease
  spdlog::debug("shutdown: wals closed, lease revoked");
  n->tracing.Shutdown(absl::Seconds(5));
}

}  // namespace

int RunNode(const ServerConfig& config, ShutdownSignals* signals) {
  Node n;
  n.tracing = trace::InitTracingFromEnv("kingfisher");
  if (absl::Status st = Open(config, signals, &n); !st.ok()) {
    if (absl::IsCancelled(st)) {
      spdlog::info("kingfisher node stopped before it started: {}", std::string(st.message()));
      Close(config, &n);
      return 0;
    }
    spdlog::critical("kingfisher node failed to start: {}", std::string(st.message()));
    Close(config, &n);
    return 1;
  }
  n.http->SetHealth(Health::kServing, "");
  spdlog::info(
      "kingfisher started role=node node_id={} listen={} http_listen={} data_dir={} cluster={} "
      "pchannels={} etcd={} wal_backend={}",
      config.node_id, n.rpc->address(), n.http->address(), config.data_dir, config.cluster,
      config.pchannels, config.etcd, config.wal_backend);
  const int sig = signals->WaitForShutdown();
  spdlog::info("shutdown requested signal={}: draining", sig);
  n.http->SetHealth(Health::kStopping, "draining");
  Close(config, &n);
  spdlog::info("kingfisher node stopped");
  return 0;
}

}  // namespace kf::server
