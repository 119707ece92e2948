#include "server/server_main.h"

#include <cctype>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "common/metrics/registry.h"
#include "server/config.h"
#include "server/coord.h"
#include "server/logstore.h"
#include "server/node.h"
#include "server/process_metrics.h"
#include "server/signals.h"
#include "server/standalone.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace kf::server {
namespace {

constexpr int kUsageError = 2;

struct Flags {
  std::string config_path;
  std::map<std::string, std::string> raw;
};

std::string FlagName(const std::string& key) {
  std::string name = "--" + key;
  for (char& c : name) {
    if (c == '_') c = '-';
  }
  return name;
}

void AddServerFlags(CLI::App* app, Flags* flags) {
  app->add_option("--config", flags->config_path,
                  "YAML config file; keys mirror the flags (listen, data_dir, ...). "
                  "Env: KINGFISHER_CONFIG");
  for (const SettingInfo& s : AllSettings()) {
    app->add_option(
        FlagName(s.key), flags->raw[s.key], std::string(s.help) + ". Env: KINGFISHER_" + [&] {
          std::string up = s.key;
          for (char& c : up) c = static_cast<char>(std::toupper(c));
          return up;
        }());
  }
}

void SetUpLogging(const std::string& level) {
  auto logger = spdlog::stderr_logger_mt("kingfisher");
  // key=value messages after a fixed prefix: easy to grep and to parse.
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z level=%l thread=%t %v");
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

int RunRole(const std::string& role, CLI::App* app, const Flags& flags, const ServerHooks& hooks) {
  Settings given;
  for (const SettingInfo& s : AllSettings()) {
    if (app->get_option(FlagName(s.key))->count() > 0) given[s.key] = flags.raw.at(s.key);
  }
  std::string config_path = flags.config_path;
  if (config_path.empty()) {
    if (const char* env = std::getenv("KINGFISHER_CONFIG")) config_path = env;
  }
  Settings file;
  if (!config_path.empty()) {
    auto loaded = LoadConfigFile(config_path);
    if (!loaded.ok()) {
      std::cerr << "kingfisher: " << loaded.status().message() << "\n";
      return kUsageError;
    }
    file = *std::move(loaded);
  }
  auto config =
      ResolveConfig(given, EnvSettings([](const char* n) { return std::getenv(n); }), file);
  if (!config.ok()) {
    std::cerr << "kingfisher: " << config.status().message() << "\n";
    return kUsageError;
  }
  if (role != "standalone" && role != "coord" && role != "node" && role != "logstore") {
    std::cerr << "kingfisher: role '" << role
              << "' is not available yet (use standalone, coord, node or logstore)\n";
    return kUsageError;
  }
  if ((role == "coord" || role == "node") && config->etcd.empty()) {
    std::cerr << "kingfisher: run " << role << " needs --etcd URL[,URL...] (or KINGFISHER_ETCD)\n";
    return kUsageError;
  }
  if (role == "node" && config->node_id < 1) {
    std::cerr << "kingfisher: run node needs --node-id N (N >= 1, unique in the cluster)\n";
    return kUsageError;
  }
  SetUpLogging(config->log_level);
  // static: scraped until the process exits.
  static const std::vector<metrics::CallbackHandle> process_metrics =
      RegisterProcessMetrics(metrics::DefaultRegistry());
  static ShutdownSignals signals;  // static: its detached thread outlives main's frame
  signals.Start();
  if (role == "coord") return RunCoord(*config, &signals);
  if (role == "node") return RunNode(*config, &signals);
  if (role == "logstore") return RunLogStore(*config, &signals);
  return RunStandalone(*config, &signals, hooks);
}

}  // namespace

int Main(int argc, char** argv, const ServerHooks& hooks) {
  // Before any thread exists (gRPC, spdlog, httplib): see signals.h.
  ShutdownSignals::Block();

  CLI::App app{"Kingfisher: a streaming write-ahead-log service"};
  app.require_subcommand(1);
  CLI::App* run = app.add_subcommand("run", "Run a server role");
  run->require_subcommand(1);
  Flags flags;
  std::string role;
  struct RoleInfo {
    const char* name;
    const char* help;
  };
  const RoleInfo roles[] = {
      {"standalone", "Coordinator and streaming node for every pchannel in one process"},
      {"coord", "Coordinator: timestamp oracle and pchannel assignment over etcd (--etcd)"},
      {"node",
       "Streaming node: serves the pchannels the coordinator assigns it (--node-id, --etcd)"},
      {"logstore",
       "Quorum WAL log store: replicas of the quorum backend (--data-dir, --object-store, "
       "--etcd)"},
  };
  std::map<std::string, CLI::App*> role_apps;
  for (const RoleInfo& r : roles) {
    CLI::App* sub = run->add_subcommand(r.name, r.help);
    AddServerFlags(sub, &flags);
    sub->callback([&role, name = std::string(r.name)] { role = name; });
    role_apps[r.name] = sub;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help or the error
    return rc == 0 ? 0 : kUsageError;
  }
  return RunRole(role, role_apps.at(role), flags, hooks);
}

}  // namespace kf::server
