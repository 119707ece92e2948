#include "server/standalone.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "common/absl_compat.h"
#include "rpc/rpc_server.h"
#include "rpc/wal_registry.h"
#include "rpc/wal_registry_metrics.h"
#include "server/data_dir.h"
#include "server/http_server.h"
#include "spdlog/spdlog.h"
#include "storage/tso/timestamp_allocator.h"
#include "trace/env.h"
#include "wal/backends/local/local_opener.h"
#include "wal/wal.h"

namespace kf::server {
namespace {

constexpr int64_t kStandaloneNodeId = 1;
// gRPC limits sit above the largest payload: properties, framing and the request envelope.

// TEST ONLY: see standalone.h. Returns an empty hook unless the env variable is set.
std::function<void()> CrashAfterDurableHookForTest() {
  const char* env = std::getenv("KINGFISHER_TEST_CRASH_AFTER_DURABLE");
  int64_t n = 0;
  if (env == nullptr || !absl::SimpleAtoi(env, &n) || n <= 0) return {};
  spdlog::warn(
      "test fault hook armed: crash after durable append #{} (KINGFISHER_TEST_CRASH_"
      "AFTER_DURABLE)",
      n);
  auto count = std::make_shared<std::atomic<int64_t>>(0);
  return [count, n] {
    if (count->fetch_add(1) + 1 == n) std::_Exit(137);
  };
}

// Everything the server opened, in the order it must be torn down (reverse of members).
struct Standalone {
  std::unique_ptr<DataDir> data_dir;
  trace::TracingHandle tracing;
  std::unique_ptr<TimestampAllocator> tso;
  std::unique_ptr<wal::WalOpener> opener;
  rpc::StaticWalRegistry registry;
  std::unique_ptr<rpc::RpcServer> rpc;
  std::unique_ptr<HttpServer> http;
  std::vector<metrics::CallbackHandle> gauges;  // over `registry`: unregistered before it goes
};

absl::Status Open(const ServerConfig& config, Standalone* s) {
  auto dir = DataDir::Open(config.data_dir, kStandaloneNodeId,
                           DataDir::Identity{config.cluster, config.pchannels});
  if (!dir.ok()) return dir.status();
  s->data_dir = *std::move(dir);

  // Before the WALs, so /healthz answers (503 "starting") while they recover; after the data
  // dir lock, so a second server on the same dir reports the lock, not the port.
  auto http = HttpServer::Start(config.http_listen);
  if (!http.ok()) return http.status();
  s->http = *std::move(http);

  auto tso = TimestampAllocator::Open(s->data_dir->tso_path(), {});
  if (!tso.ok()) return tso.status();
  s->tso = *std::move(tso);

  auto term = s->data_dir->NextTerm();
  if (!term.ok()) return term.status();

  wal::local::LocalOpenerOptions opener_options;
  opener_options.root = s->data_dir->wal_dir();
  // An entry is the encoded message: payload plus properties.
  opener_options.max_entry_bytes = std::max<uint64_t>(
      opener_options.max_entry_bytes, config.max_payload_bytes + kMessageHeadroomBytes);
  s->opener = wal::local::NewLocalOpener(opener_options);

  for (const std::string& pchannel : config.PChannelNames()) {
    auto backend = s->opener->Open(wal::OpenOptions{.pchannel = pchannel, .term = *term});
    if (!backend.ok()) {
      return absl::Status(backend.status().code(),
                          "open WAL " + pchannel + ": " + std::string(backend.status().message()));
    }
    wal::WalOptions options;
    options.pchannel = pchannel;
    options.tso = s->tso.get();
    auto w = wal::OpenWal(std::move(options), *std::move(backend));
    if (!w.ok()) {
      return absl::Status(w.status().code(),
                          "recover WAL " + pchannel + ": " + std::string(w.status().message()));
    }
    s->registry.Add(std::shared_ptr<wal::Wal>(*std::move(w)));
  }
  s->gauges = rpc::RegisterWalGauges(metrics::DefaultRegistry(), &s->registry);
  for (auto& h :
       rpc::RegisterAssignmentGauges(metrics::DefaultRegistry(), &s->registry, kStandaloneNodeId)) {
    s->gauges.push_back(std::move(h));
  }

  rpc::RpcServerOptions rpc_options;
  rpc_options.listen = config.listen;
  rpc_options.max_message_bytes = config.max_payload_bytes + kMessageHeadroomBytes;
  rpc_options.wal_registry = &s->registry;
  rpc_options.coord.registry = &s->registry;
  rpc_options.coord.local_node_id = kStandaloneNodeId;
  rpc_options.node.max_payload_bytes = config.max_payload_bytes;
  rpc_options.node.after_durable_for_test = CrashAfterDurableHookForTest();
  auto rpc = rpc::RpcServer::Start(std::move(rpc_options));
  if (!rpc.ok()) return rpc.status();
  s->rpc = *std::move(rpc);
  return absl::OkStatus();
}

void Close(const ServerConfig& config, Standalone* s) {
  // The HTTP port stays up to the end, so /healthz says why the server no longer serves.
  if (s->http) s->http->SetHealth(Health::kStopping, "shutting down");
  if (s->rpc) s->rpc->Shutdown(absl::Seconds(config.shutdown_grace_seconds));
  spdlog::debug("shutdown: rpc stopped");
  for (const auto& w : s->registry.All()) w->Close();
  spdlog::debug("shutdown: wals closed");
  if (s->http) s->http->Stop();
  spdlog::debug("shutdown: http stopped");
  s->tracing.Shutdown(absl::Seconds(5));
}

}  // namespace

int RunStandalone(const ServerConfig& config, ShutdownSignals* signals) {
  Standalone s;
  s.tracing = trace::InitTracingFromEnv("kingfisher");
  if (absl::Status st = Open(config, &s); !st.ok()) {
    spdlog::critical("kingfisher failed to start: {}", std::string(st.message()));
    Close(config, &s);
    return 1;
  }
  s.http->SetHealth(Health::kServing, "");
  const auto pchannels = s.registry.List();
  std::vector<std::string> names;
  for (const auto& p : pchannels) names.push_back(p.pchannel);
  spdlog::info(
      "kingfisher started role=standalone listen={} http_listen={} data_dir={} cluster={} "
      "pchannels={} term={} wal_backend={} max_payload_bytes={} tracing_export={}",
      s.rpc->address(), s.http->address(), config.data_dir, config.cluster,
      absl::StrJoin(names, ","), pchannels.empty() ? 0 : pchannels.front().term.value(),
      config.wal_backend, config.max_payload_bytes, s.tracing.exporting());

  const int sig = signals->WaitForShutdown();
  spdlog::info("shutdown requested signal={}: draining in-flight appends", sig);
  Close(config, &s);
  spdlog::info("kingfisher stopped");
  return 0;
}

}  // namespace kf::server
