#include "server/wal_opener.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "wal/backends/local/local_opener.h"
#include "wal/backends/quorum/quorum_opener.h"

namespace kf::server {

std::unique_ptr<wal::WalOpener> NewWalOpener(const ServerConfig& config, const std::string& wal_dir,
                                             meta::MetaStore* meta) {
  if (config.wal_backend == "quorum") {
    wal::quorum::QuorumOpenerOptions options;
    options.meta = meta;
    options.meta_prefix = absl::StrCat("kf/", config.cluster, "/wal/quorum");
    options.registry_prefix = absl::StrCat("kf/", config.cluster, "/logstores/");
    options.logstores = absl::StrSplit(config.logstores, ',', absl::SkipEmpty());
    options.max_entry_bytes = config.max_payload_bytes + kMessageHeadroomBytes;
    return wal::quorum::NewQuorumOpener(std::move(options));
  }
  wal::local::LocalOpenerOptions options;
  options.root = wal_dir;
  options.max_entry_bytes =
      std::max<uint64_t>(options.max_entry_bytes, config.max_payload_bytes + kMessageHeadroomBytes);
  return wal::local::NewLocalOpener(options);
}

}  // namespace kf::server
