// ServerConfig: the settings of a `kingfisher run <role>` process and how they are resolved.
//
// Every setting has a key (the YAML key of --config), a flag (--key with '_' -> '-') and an
// env variable (KINGFISHER_<KEY>). Precedence: flag > env > config file > default. Unknown YAML
// keys are errors (a typo must not silently fall back to a default). docs/configuration.md
// lists every key.
//
// Pure functions over their inputs: thread-safe. Errors: INVALID_ARGUMENT naming the key and
// the layer it came from; NOT_FOUND / INVALID_ARGUMENT for an unreadable or malformed file.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kf::server {

struct ServerConfig {
  std::string listen = "127.0.0.1:19530";
  std::string http_listen = "127.0.0.1:9091";
  // Where clients reach this process (published in the metadata store for discovery). Empty:
  // the bound listen address, a wildcard host replaced by this machine's hostname.
  std::string advertise_address;
  // TLS (docs/security.md). The gRPC listener serves TLS with this certificate chain and key
  // (PEM; empty: plaintext), and requires client certificates signed by tls_client_ca_file's
  // CAs when that is set. With TLS on, the process also dials the other Kingfisher servers
  // (coordinator, nodes, logstores, a replication secondary) over TLS, verifying them with
  // tls_ca_file's CAs (empty: the system's roots) and presenting its own certificate.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  std::string tls_ca_file;
  std::string data_dir = "./kingfisher-data";
  std::string cluster = "kf";
  int pchannels = 4;
  std::string wal_backend = "local";
  uint64_t max_payload_bytes = 64ull << 20;
  std::string log_level = "info";
  // For the distributed roles and the remote backends (not available yet): accepted and kept so
  // that one config file serves every role.
  std::string etcd;
  // TLS to etcd (https:// endpoints): the CAs that verify it (empty: the system's roots), and
  // a client certificate and key when etcd asks for one (docs/security.md).
  std::string etcd_ca_file;
  std::string etcd_cert_file;
  std::string etcd_key_file;
  std::string object_store;
  std::string logstores;
  // Seconds a graceful shutdown waits for in-flight appends before cancelling them.
  int shutdown_grace_seconds = 10;
  // Coordinator: seconds between periodic balancing rounds (and between rebalancing moves).
  double balance_interval = 10;
  // Coordinator: TTL in seconds of its election lease (a successor takes over this long after
  // a crash). Node: TTL of its registration (its pchannels move this long after a crash).
  double lease_ttl = 10;
  // Node: its id, unique in the cluster (required by `run node`; standalone is node 1).
  int64_t node_id = 0;
  // Node: seconds a SIGTERM waits for the coordinator to move the node's pchannels away.
  double drain_timeout = 30;
  // Search (docs/search.md): rows per growing chunk (a full chunk gets an IVF index with one
  // list per 64 rows), and the lists a search probes per indexed chunk unless it says.
  uint64_t search_chunk_rows = 8192;
  uint64_t search_nprobe = 16;
  // Search: when a partition's growing segment is sealed (a CreateSegment appended,
  // docs/recovery-storage.md): at this many rows or bytes, this many seconds after its first
  // row, or after its last; 0: never for that reason.
  uint64_t segment_seal_rows = 1 << 20;
  uint64_t segment_seal_bytes = 512ull << 20;
  double segment_max_lifetime = 3600;
  double segment_max_idle = 600;
  // Seconds between a pchannel's checkpoints while anything changed (docs/recovery-storage.md);
  // a sealed segment is flushed and checkpointed at once.
  double checkpoint_interval = 10;
  // Seconds one recovery-storage call (a segment PUT, a checkpoint commit) may take.
  double object_store_timeout = 30;
  // Local backend: bytes after which a pchannel's log rolls to a new segment file, the unit
  // truncation reclaims.
  uint64_t wal_segment_bytes = 64ull << 20;
  // Seconds of WAL kept readable for consumers (raw vchannels, CDC) beyond what checkpoints
  // need; older parts are truncated after a checkpoint (docs/recovery-storage.md).
  double wal_retention = 7 * 24 * 3600;
  // Bytes of WAL beyond which older parts go after a checkpoint even if younger than
  // wal_retention (Kafka's retention.bytes); 0: no size bound.
  uint64_t wal_retention_bytes = 0;
  // Search: bytes of growing data (rows and indexes) the node holds before it refuses Inserts
  // RESOURCE_EXHAUSTED. 0: half of the machine's physical memory.
  uint64_t growing_memory_limit = 0;
  // Resident memory of the process above which Inserts are refused (0: no limit).
  uint64_t memory_limit = 0;

  // `<cluster>-dml_<i>`, i = 0..pchannels-1.
  std::vector<std::string> PChannelNames() const;
};

// Room for a message's properties and framing above max_payload_bytes (gRPC message size and
// WAL entry limits).
inline constexpr uint64_t kMessageHeadroomBytes = 4u << 20;

// key -> raw text value of one layer.
using Settings = std::map<std::string, std::string>;

struct SettingInfo {
  const char* key;
  const char* help;  // one line, used by --help and the docs
};
// Every key, in documentation order.
const std::vector<SettingInfo>& AllSettings();

// The env layer: KINGFISHER_<KEY> for every key (empty values count as set).
Settings EnvSettings(const std::function<const char*(const char*)>& getenv);

// The config-file layer. A sequence value (e.g. etcd endpoints) is joined with ','.
absl::StatusOr<Settings> LoadConfigFile(const std::string& path);

// Merges the layers over the defaults and validates the result.
absl::StatusOr<ServerConfig> ResolveConfig(const Settings& flags, const Settings& env,
                                           const Settings& file);

}  // namespace kf::server
