// The WAL opener a server role uses (standalone, node), from its configuration.
//
// Pure function over its inputs: thread-safe. Ownership: the caller owns the opener.
#pragma once

#include <memory>
#include <string>

#include "server/config.h"
#include "wal/backend.h"

namespace kf::server {

// The local backend rooted at `wal_dir`, its entry limit raised to fit the largest message the
// configuration accepts (payload plus properties: kMessageHeadroomBytes).
std::unique_ptr<wal::WalOpener> NewWalOpener(const ServerConfig& config,
                                             const std::string& wal_dir);

}  // namespace kf::server
