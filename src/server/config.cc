#include "server/config.h"

#include <algorithm>
#include <cctype>
#include <exception>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/absl_compat.h"
#include "yaml-cpp/yaml.h"

namespace kf::server {
namespace {

std::string EnvName(const std::string& key) {
  std::string name = "KINGFISHER_";
  for (char c : key) name.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return name;
}

bool KnownKey(const std::string& key) {
  for (const auto& s : AllSettings()) {
    if (key == s.key) return true;
  }
  return false;
}

// The winning value of `key` and where it came from, or nullptr when no layer sets it.
struct Source {
  const std::string* value = nullptr;
  std::string where;
};

Source Pick(const std::string& key, const Settings& flags, const Settings& env,
            const Settings& file) {
  if (auto it = flags.find(key); it != flags.end()) {
    std::string flag = key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    return {&it->second, absl::StrCat("flag --", flag, " (", key, ")")};
  }
  if (auto it = env.find(key); it != env.end()) return {&it->second, "env " + EnvName(key)};
  if (auto it = file.find(key); it != file.end()) return {&it->second, "config key " + key};
  return {};
}

absl::Status Bad(const Source& src, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(src.where, "='", *src.value, "': ", why));
}

bool ValidClusterName(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

}  // namespace

std::vector<std::string> ServerConfig::PChannelNames() const {
  std::vector<std::string> out;
  for (int i = 0; i < pchannels; ++i) out.push_back(absl::StrCat(cluster, "-dml_", i));
  return out;
}

const std::vector<SettingInfo>& AllSettings() {
  static const auto* kAll = new std::vector<SettingInfo>{
      {"listen", "gRPC listen address HOST:PORT (port 0: any free port)"},
      {"http_listen", "HTTP address for /healthz and /metrics HOST:PORT"},
      {"advertise_address",
       "HOST:PORT clients reach this server at (default: the bound listen address)"},
      {"tls_cert_file",
       "PEM certificate chain the gRPC listener serves TLS with (empty: plaintext)"},
      {"tls_key_file", "PEM private key of tls_cert_file"},
      {"tls_client_ca_file",
       "PEM CA certificates that must sign a client's certificate (mutual TLS; empty: no "
       "client certificates)"},
      {"tls_ca_file",
       "PEM CA certificates this server verifies the servers it dials with, when TLS is on "
       "(empty: the system's roots)"},
      {"data_dir", "directory holding the WAL and node state"},
      {"cluster", "cluster name; pchannels are <cluster>-dml_<i>"},
      {"pchannels", "number of pchannels, fixed when the data dir is initialised"},
      {"wal_backend", "WAL backend: local, objectstore (needs object_store) or quorum"},
      {"max_payload_bytes", "largest accepted message payload in bytes"},
      {"log_level", "trace, debug, info, warn, error, critical or off"},
      {"etcd", "etcd endpoints URL[,URL...] (distributed roles: required by coord)"},
      {"etcd_ca_file",
       "PEM CA certificates that verify etcd's https:// endpoints (empty: the system's roots)"},
      {"etcd_cert_file", "PEM client certificate for an etcd that asks for one"},
      {"etcd_key_file", "PEM private key of etcd_cert_file"},
      {"object_store",
       "file:///DIR or s3://[ACCESS:SECRET@]HOST:PORT/BUCKET: the objectstore WAL's blocks and "
       "sealed segments (standalone default for segments: file://DATA_DIR/objects)"},
      {"logstores", "HOST:PORT,... of the quorum backend (default: those registered in etcd)"},
      {"shutdown_grace_seconds", "how long a graceful shutdown waits for in-flight appends"},
      {"balance_interval", "coord: seconds between balancing rounds and rebalancing moves"},
      {"lease_ttl",
       "coord, node: seconds of the election / registration lease (failover time after a "
       "crash)"},
      {"node_id", "node: id of this streaming node, unique in the cluster (>= 1)"},
      {"drain_timeout", "node: seconds a SIGTERM waits for its pchannels to move away"},
      {"search_chunk_rows", "rows per growing chunk; a full chunk gets an IVF index"},
      {"search_nprobe", "IVF lists a search probes per indexed chunk unless it says"},
      {"segment_seal_rows", "rows at which a growing segment is sealed (0: never)"},
      {"segment_seal_bytes", "bytes at which a growing segment is sealed (0: never)"},
      {"segment_max_lifetime",
       "seconds after its first row at which a growing segment is sealed (0: never)"},
      {"segment_max_idle",
       "seconds after its last row at which a growing segment is sealed (0: never)"},
      {"wal_segment_bytes",
       "bytes after which a pchannel's log rolls to a new segment (local: a file, objectstore: "
       "its blocks, quorum: an ensemble's file), the unit of truncation"},
      {"wal_retention",
       "seconds of WAL kept for consumers beyond what checkpoints need (0: only what they need)"},
      {"wal_retention_bytes",
       "bytes of WAL per pchannel beyond which older parts go after a checkpoint, however young "
       "(0: no size bound)"},
      {"checkpoint_interval",
       "seconds between a pchannel's recovery checkpoints while it changes (a seal: at once)"},
      {"object_store_timeout",
       "seconds a segment object or checkpoint call may take, retries included, before the "
       "checkpoint fails and is tried again"},
      {"growing_memory_limit",
       "bytes of growing rows and indexes before Inserts are refused (0: half the RAM)"},
      {"memory_limit",
       "bytes of its own (anonymous) resident memory the process stays under: Inserts are "
       "refused from 90% of it (0: no limit)"},
  };
  return *kAll;
}

Settings EnvSettings(const std::function<const char*(const char*)>& getenv) {
  Settings out;
  for (const auto& s : AllSettings()) {
    if (const char* v = getenv(EnvName(s.key).c_str())) out[s.key] = v;
  }
  return out;
}

absl::StatusOr<Settings> LoadConfigFile(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return absl::NotFoundError(absl::StrCat("cannot read config file ", path));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config file ", path, ": ", e.what()));
  }
  Settings out;
  if (root.IsNull()) return out;  // an empty file
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat("config file ", path, " must be a YAML map"));
  }
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (!KnownKey(key)) {
        return absl::InvalidArgumentError(
            absl::StrCat("config file ", path, ": unknown key '", key, "'"));
      }
      const YAML::Node& v = kv.second;
      if (v.IsSequence()) {
        std::vector<std::string> items;
        for (const auto& item : v) items.push_back(item.as<std::string>());
        out[key] = absl::StrJoin(items, ",");
      } else if (v.IsScalar()) {
        out[key] = v.as<std::string>();
      } else if (v.IsNull()) {
        out[key] = "";
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("config file ", path, ": key '", key, "' must be a scalar"));
      }
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config file ", path, ": ", e.what()));
  }
  return out;
}

absl::StatusOr<ServerConfig> ResolveConfig(const Settings& flags, const Settings& env,
                                           const Settings& file) {
  ServerConfig c;
  auto str = [&](const char* key, std::string* out) {
    Source src = Pick(key, flags, env, file);
    if (src.value != nullptr) *out = *src.value;
    return src;
  };
  const std::pair<const char*, std::string*> kPaths[] = {
      {"listen", &c.listen}, {"http_listen", &c.http_listen}, {"data_dir", &c.data_dir}};
  for (const auto& [key, field] : kPaths) {
    Source src = str(key, field);
    if (src.value != nullptr && src.value->empty()) return Bad(src, "must not be empty");
  }
  if (Source src = str("cluster", &c.cluster); src.value && !ValidClusterName(c.cluster)) {
    return Bad(src, "cluster names use letters, digits, '-' and '_'");
  }
  if (Source src = Pick("pchannels", flags, env, file); src.value) {
    if (!absl::SimpleAtoi(ToAbsl(*src.value), &c.pchannels) || c.pchannels < 1 ||
        c.pchannels > 1024) {
      return Bad(src, "must be an integer in [1, 1024]");
    }
  }
  if (Source src = str("wal_backend", &c.wal_backend); src.value) {
    if (c.wal_backend != "local" && c.wal_backend != "objectstore" && c.wal_backend != "quorum") {
      return Bad(src, "unknown WAL backend (use local, objectstore or quorum)");
    }
  }
  if (Source src = Pick("max_payload_bytes", flags, env, file); src.value) {
    if (!absl::SimpleAtoi(ToAbsl(*src.value), &c.max_payload_bytes) || c.max_payload_bytes < 1 ||
        c.max_payload_bytes > (1ull << 30)) {
      return Bad(src, "must be an integer in [1, 1073741824]");
    }
  }
  if (Source src = str("log_level", &c.log_level); src.value) {
    static const char* kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
    if (std::none_of(std::begin(kLevels), std::end(kLevels),
                     [&](const char* l) { return c.log_level == l; })) {
      return Bad(src, "must be one of trace, debug, info, warn, error, critical, off");
    }
  }
  str("advertise_address", &c.advertise_address);
  str("tls_cert_file", &c.tls_cert_file);
  str("tls_key_file", &c.tls_key_file);
  str("tls_client_ca_file", &c.tls_client_ca_file);
  str("tls_ca_file", &c.tls_ca_file);
  str("etcd_ca_file", &c.etcd_ca_file);
  str("etcd_cert_file", &c.etcd_cert_file);
  str("etcd_key_file", &c.etcd_key_file);
  if (c.etcd_cert_file.empty() != c.etcd_key_file.empty()) {
    return absl::InvalidArgumentError("etcd_cert_file and etcd_key_file go together: set both");
  }
  if (c.tls_cert_file.empty() != c.tls_key_file.empty()) {
    return absl::InvalidArgumentError("tls_cert_file and tls_key_file go together: set both");
  }
  if (c.tls_cert_file.empty() && (!c.tls_client_ca_file.empty() || !c.tls_ca_file.empty())) {
    return absl::InvalidArgumentError(
        "tls_client_ca_file and tls_ca_file need tls_cert_file and tls_key_file (TLS is off)");
  }
  str("etcd", &c.etcd);
  str("object_store", &c.object_store);
  if (c.wal_backend == "objectstore" && c.object_store.empty()) {
    return absl::InvalidArgumentError(
        "wal_backend objectstore needs object_store (file:///DIR or s3://HOST:PORT/BUCKET)");
  }
  str("logstores", &c.logstores);
  if (c.wal_backend == "quorum" && c.logstores.empty() && c.etcd.empty()) {
    return absl::InvalidArgumentError(
        "wal_backend quorum needs logstores (HOST:PORT,...) or etcd (registered logstores)");
  }
  if (Source src = Pick("shutdown_grace_seconds", flags, env, file); src.value) {
    if (!absl::SimpleAtoi(ToAbsl(*src.value), &c.shutdown_grace_seconds) ||
        c.shutdown_grace_seconds < 0 || c.shutdown_grace_seconds > 3600) {
      return Bad(src, "must be an integer in [0, 3600]");
    }
  }
  if (Source src = Pick("node_id", flags, env, file); src.value) {
    if (!absl::SimpleAtoi(ToAbsl(*src.value), &c.node_id) || c.node_id < 1) {
      return Bad(src, "must be an integer >= 1");
    }
  }
  struct Count {
    const char* key;
    uint64_t* field;
    uint64_t min, max;
  };
  const Count kCounts[] = {{"search_chunk_rows", &c.search_chunk_rows, 64, 1u << 20},
                           {"search_nprobe", &c.search_nprobe, 1, 65536},
                           {"segment_seal_rows", &c.segment_seal_rows, 0, 1ull << 31},
                           {"segment_seal_bytes", &c.segment_seal_bytes, 0, 1ull << 40},
                           {"wal_retention_bytes", &c.wal_retention_bytes, 0, 1ull << 50},
                           {"growing_memory_limit", &c.growing_memory_limit, 0, ~0ull},
                           {"memory_limit", &c.memory_limit, 0, ~0ull},
                           {"wal_segment_bytes", &c.wal_segment_bytes, 64ull << 10, 1ull << 30}};
  for (const Count& n : kCounts) {
    Source src = Pick(n.key, flags, env, file);
    if (src.value == nullptr) continue;
    if (!absl::SimpleAtoi(ToAbsl(*src.value), n.field) || *n.field < n.min || *n.field > n.max) {
      return Bad(src, absl::StrCat("must be an integer in [", n.min, ", ", n.max, "]"));
    }
  }
  // A segment sealed every few rows would cost a CreateSegment, a flush and a checkpoint each.
  if (c.segment_seal_bytes != 0 && c.segment_seal_bytes < (1u << 20)) {
    return Bad(Pick("segment_seal_bytes", flags, env, file),
               "must be 0 or at least 1048576 (1 MiB)");
  }
  // A sealed segment keeps its chunks allocated whole: segments smaller than a chunk waste it.
  if (c.segment_seal_rows != 0 && c.segment_seal_rows < c.search_chunk_rows) {
    return Bad(Pick("segment_seal_rows", flags, env, file),
               absl::StrCat("must be 0 or at least search_chunk_rows (", c.search_chunk_rows, ")"));
  }
  const std::pair<const char*, double*> kSeconds[] = {
      {"balance_interval", &c.balance_interval},
      {"lease_ttl", &c.lease_ttl},
      {"drain_timeout", &c.drain_timeout},
      {"checkpoint_interval", &c.checkpoint_interval},
      {"object_store_timeout", &c.object_store_timeout}};
  // Durations where 0 means "never" (or "nothing beyond"), up to ten years.
  const std::pair<const char*, double*> kLongSeconds[] = {
      {"wal_retention", &c.wal_retention},
      {"segment_max_lifetime", &c.segment_max_lifetime},
      {"segment_max_idle", &c.segment_max_idle}};
  for (const auto& [key, field] : kLongSeconds) {
    Source src = Pick(key, flags, env, file);
    if (src.value == nullptr) continue;
    if (!absl::SimpleAtod(ToAbsl(*src.value), field) ||
        !(*field >= 0 && *field <= 10 * 365 * 24 * 3600.0)) {
      return Bad(src, "must be a number of seconds in [0, 315360000]");
    }
  }
  for (const auto& [key, field] : kSeconds) {
    Source src = Pick(key, flags, env, file);
    if (src.value == nullptr) continue;
    // etcd grants whole seconds (at least 1); an interval below 100 ms would spin.
    const double min = std::string(key) == "lease_ttl" ? 1 : 0.1;
    if (!absl::SimpleAtod(ToAbsl(*src.value), field) || !(*field >= min && *field <= 3600)) {
      return Bad(src, absl::StrCat("must be a number of seconds in [", min, ", 3600]"));
    }
  }
  return c;
}

}  // namespace kf::server
