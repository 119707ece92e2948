// The WAL opener a server role uses (standalone, node), from its configuration.
//
// Pure function over its inputs: thread-safe. Ownership: the caller owns the opener.
#pragma once

#include <memory>
#include <string>

#include "server/config.h"
#include "storage/meta/meta_store.h"
#include "wal/backend.h"

namespace kf::server {

// The configured backend: local rooted at `wal_dir`, or quorum over `config.logstores` (or the
// logstores registered under kf/<cluster>/logstores/) with its metadata in `meta` (borrowed,
// must outlive the opener). The entry limit fits the largest message the configuration accepts
// (payload plus properties: kMessageHeadroomBytes).
std::unique_ptr<wal::WalOpener> NewWalOpener(const ServerConfig& config, const std::string& wal_dir,
                                             meta::MetaStore* meta = nullptr);

}  // namespace kf::server
