#include "server/wal_opener.h"

#include <algorithm>

#include "wal/backends/local/local_opener.h"

namespace kf::server {

std::unique_ptr<wal::WalOpener> NewWalOpener(const ServerConfig& config,
                                             const std::string& wal_dir) {
  wal::local::LocalOpenerOptions options;
  options.root = wal_dir;
  options.max_entry_bytes =
      std::max<uint64_t>(options.max_entry_bytes, config.max_payload_bytes + kMessageHeadroomBytes);
  return wal::local::NewLocalOpener(options);
}

}  // namespace kf::server
