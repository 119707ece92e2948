#include "server/wal_opener.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "storage/object/object_store_url.h"
#include "streaming/cluster_meta.h"
#include "wal/backends/local/local_opener.h"
#include "wal/backends/objectstore/object_opener.h"
#include "wal/backends/quorum/quorum_opener.h"

namespace kf::server {
namespace {

class HookedOpener final : public wal::WalOpener {
 public:
  HookedOpener(std::unique_ptr<wal::WalOpener> inner,
               std::function<void(const std::string&)> before_open)
      : inner_(std::move(inner)), before_open_(std::move(before_open)) {}

  absl::StatusOr<std::unique_ptr<wal::WalBackend>> Open(const wal::OpenOptions& options) override {
    before_open_(options.pchannel);
    return inner_->Open(options);
  }
  WalKind kind() const override { return inner_->kind(); }

 private:
  const std::unique_ptr<wal::WalOpener> inner_;
  const std::function<void(const std::string&)> before_open_;
};

}  // namespace

std::unique_ptr<wal::WalOpener> WithOpenHook(std::unique_ptr<wal::WalOpener> opener,
                                             std::function<void(const std::string&)> before_open) {
  if (!before_open) return opener;
  return std::make_unique<HookedOpener>(std::move(opener), std::move(before_open));
}

void ApplyMessageLimits(const ServerConfig& config, wal::WalOptions* wal) {
  wal->txn.max_txn_bytes = config.max_payload_bytes;
  wal->txn.max_open_bytes = std::max<uint64_t>(kMinOpenTxnBytes, 2 * config.max_payload_bytes);
  // Readers may also hold failed txns until they expire (their end is not in the log).
  wal->txn_buffer.max_held_bytes = 2 * wal->txn.max_open_bytes;
}

absl::StatusOr<WalStorage> OpenWalStorage(
    const ServerConfig& config, const std::string& wal_dir, meta::MetaStore* meta,
    std::shared_ptr<grpc::ChannelCredentials> peer_credentials) {
  const uint64_t max_entry = config.max_payload_bytes + kMessageHeadroomBytes;
  WalStorage out;
  if (config.wal_backend == "objectstore") {
    auto objects = object::OpenObjectStoreUrl(config.object_store, absl::Now() + absl::Seconds(30));
    if (!objects.ok()) return objects.status();
    out.objects = *std::move(objects);
    wal::objectstore::ObjectOpenerOptions options;
    options.store = out.objects.get();
    options.meta = meta;
    options.root = config.cluster + "/wal";
    options.meta_prefix = streaming::ClusterKeys(config.cluster).root() + "wal/objectstore/";
    options.segment_bytes = config.wal_segment_bytes;
    options.max_entry_bytes = std::max(options.max_entry_bytes, max_entry);
    out.opener = wal::objectstore::NewObjectOpener(options);
    return out;
  }
  if (config.wal_backend == "quorum") {
    if (!config.object_store.empty()) {  // where logstores upload sealed segments: a read fallback
      auto objects =
          object::OpenObjectStoreUrl(config.object_store, absl::Now() + absl::Seconds(30));
      if (!objects.ok()) return objects.status();
      out.objects = *std::move(objects);
    }
    wal::quorum::QuorumOpenerOptions options;
    options.meta = meta;
    options.meta_prefix = absl::StrCat("kf/", config.cluster, "/wal/quorum");
    options.registry_prefix = absl::StrCat("kf/", config.cluster, "/logstores/");
    options.logstores = absl::StrSplit(config.logstores, ',', absl::SkipEmpty());
    options.object_store = out.objects.get();
    options.object_prefix = absl::StrCat(config.cluster, "/wal/quorum");
    options.segment_bytes = config.wal_segment_bytes;
    options.max_entry_bytes = std::max(options.max_entry_bytes, max_entry);
    options.credentials = std::move(peer_credentials);
    out.opener = wal::quorum::NewQuorumOpener(std::move(options));
    return out;
  }
  wal::local::LocalOpenerOptions options;
  options.root = wal_dir;
  options.segment_bytes = config.wal_segment_bytes;
  options.max_entry_bytes = std::max<uint64_t>(options.max_entry_bytes, max_entry);
  out.opener = wal::local::NewLocalOpener(options);
  return out;
}

}  // namespace kf::server
