#include "server/query_setup.h"

#include <linux/magic.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <filesystem>

#include "common/errors.h"
#include "common/process_memory.h"
#include "search/index_builder.h"
#include "spdlog/spdlog.h"
#include "storage/fs/file_system.h"
#include "storage/object/object_store_url.h"
#include "streaming/cluster_meta.h"

namespace kf::server {
namespace {

// growing_memory_limit 0: half of this machine's physical memory.
size_t GrowingMemoryLimit(const ServerConfig& config) {
  if (config.growing_memory_limit != 0) return config.growing_memory_limit;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) / 2 : 0;
}

// Where segment objects of a store that does not map them are mapped from: <data-dir>/spill,
// emptied of what a crash may have left. "" (they stay in the heap) if the store maps them, if
// the dir is on tmpfs (its pages are memory anyway) or if it cannot hold a mapped copy (logged).
std::string SpillDir(const ServerConfig& config, const object::ObjectStore* segments) {
  if (segments->MapsObjects()) return "";
  fs::FileSystem* fs = fs::DefaultFileSystem();
  const std::string dir = fs::JoinPath(config.data_dir, "spill");
  absl::Status s = fs->CreateDirs(dir);
  if (s.ok()) {
    if (auto left = fs->GetChildren(dir); left.ok()) {
      for (const std::string& name : *left) (void)fs->RemoveFile(fs::JoinPath(dir, name));
    }
    if (struct statfs st; ::statfs(dir.c_str(), &st) == 0 && st.f_type == TMPFS_MAGIC) {
      spdlog::info("{} is on tmpfs: loaded segments stay in memory", dir);
      return "";
    }
    s = fs->MapCopy(dir, "probe").status();
  }
  if (!s.ok()) {
    spdlog::warn("loaded segments stay in memory: {}", s.ToString());
    return "";
  }
  return dir;
}

}  // namespace

absl::StatusOr<std::unique_ptr<object::ObjectStore>> OpenSegmentStore(
    const ServerConfig& config, const std::string& default_dir) {
  std::string url = config.object_store;
  if (url.empty()) {
    if (default_dir.empty()) return nullptr;
    url = "file://" + std::filesystem::absolute(default_dir).lexically_normal().string();
  }
  auto store = object::OpenObjectStoreUrl(url, absl::Now() + absl::Seconds(30));
  if (!store.ok()) return WithContext(store.status(), "object store for sealed segments");
  return store;
}

std::unique_ptr<query::QueryRegistry> MakeQueryRegistry(const ServerConfig& config,
                                                        TimestampSource* tso,
                                                        object::ObjectStore* segments,
                                                        meta::MetaStore* meta,
                                                        std::function<void(TimeTick)> before_wait) {
  query::QueryRegistryOptions options;
  options.shard.chunk_rows = config.search_chunk_rows;
  options.shard.seal_rows = config.segment_seal_rows;
  options.shard.seal_bytes = config.segment_seal_bytes;
  options.shard.seal_lifetime = absl::Seconds(config.segment_max_lifetime);
  options.shard.seal_idle = absl::Seconds(config.segment_max_idle);
  options.shard.indexer = std::make_shared<search::IndexBuilder>(
      search::IndexOptions{.nprobe = static_cast<size_t>(config.search_nprobe)});
  options.tso = tso;
  options.before_wait = std::move(before_wait);
  options.growing_memory_limit = GrowingMemoryLimit(config);
  options.memory_limit = config.memory_limit;
  if (options.memory_limit != 0 && ReadResidentBytes() == 0) {
    spdlog::warn("memory_limit is set but /proc/self/statm cannot be read: it refuses nothing");
  }
  if (segments != nullptr) {
    options.recovery = query::RecoveryStorageOptions{
        .objects = segments,
        .meta = meta,
        .meta_prefix = streaming::ClusterKeys(config.cluster).checkpoints_prefix(),
        .object_prefix = config.cluster + "/",
        .checkpoint_interval = absl::Seconds(config.checkpoint_interval),
        .io_timeout = absl::Seconds(config.object_store_timeout),
        .wal_retention = absl::Seconds(config.wal_retention),
        .wal_retention_bytes = config.wal_retention_bytes,
        .spill_dir = SpillDir(config, segments)};
    spdlog::info(
        "recovery storage: sealed segments in {}, a checkpoint every {} s, WAL kept {} s beyond "
        "checkpoints (size bound: {} bytes, 0 = none)",
        config.object_store.empty() ? "<data-dir>/objects" : config.object_store,
        config.checkpoint_interval, config.wal_retention, config.wal_retention_bytes);
  } else {
    spdlog::warn(
        "recovery storage off: no object_store configured, so a pchannel that opens here "
        "replays its whole WAL");
  }
  spdlog::info(
      "search: chunks of {} rows, nprobe {}, segments sealed at {} rows or {} MiB or {} s after "
      "their first row or {} s after their last (0: never), growing memory limit {} MiB, "
      "memory limit {} MiB (0: none)",
      config.search_chunk_rows, config.search_nprobe, config.segment_seal_rows,
      config.segment_seal_bytes >> 20, config.segment_max_lifetime, config.segment_max_idle,
      options.growing_memory_limit >> 20, options.memory_limit >> 20);
  return std::make_unique<query::QueryRegistry>(std::move(options));
}

void ConnectWalToQueries(const query::QueryRegistry* queries, wal::WalOptions* wal) {
  wal->admit_inserts = [queries] { return queries->AdmitInsert(); };
  if (const auto& recovery = queries->recovery(); recovery.has_value()) {
    wal->load_checkpoint = [recovery = &*recovery](const std::string& pchannel) {
      return query::LoadWalState(*recovery, pchannel);
    };
  }
}

}  // namespace kf::server
