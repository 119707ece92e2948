// The WAL backend a server role (standalone, node) writes to, and the WAL limits that follow
// from its configuration (`wal_backend`, `max_payload_bytes`: docs/configuration.md).
//
// Thread-safety: OpenWalStorage is thread-safe. Ownership: the caller owns the WalStorage; the
// metadata store is borrowed and must outlive it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"
#include "server/config.h"
#include "storage/meta/meta_store.h"
#include "storage/object/object_store.h"
#include "wal/backend.h"
#include "wal/wal.h"

namespace kf::server {

struct WalStorage {
  // The objectstore backend's store, or the quorum backend's upload store (a read fallback).
  std::unique_ptr<object::ObjectStore> objects;
  std::unique_ptr<wal::WalOpener> opener;  // declared last: goes first
};

// local: rooted at `wal_dir`. objectstore: the store at config.object_store, blocks under
// `<cluster>/wal/`, segment metadata in `meta` under `kf/<cluster>/wal/objectstore/`. quorum:
// over config.logstores (or those registered under kf/<cluster>/logstores/), metadata in `meta`
// under kf/<cluster>/wal/quorum (docs/quorum-wal.md). Entry
// limits are raised to fit the largest message the configuration accepts (payload plus
// properties: kMessageHeadroomBytes). The quorum backend dials its logstores with
// `peer_credentials` (server/credentials.h). Errors: the object store's (unreachable, bad URL).
absl::StatusOr<WalStorage> OpenWalStorage(
    const ServerConfig& config, const std::string& wal_dir, meta::MetaStore* meta,
    std::shared_ptr<grpc::ChannelCredentials> peer_credentials);

// The WAL's limits that follow from max_payload_bytes: a committed transaction is delivered and
// replicated as one message, so it is bounded like one (TxnManagerOptions::max_txn_bytes); the
// open transactions of a pchannel hold at most twice that, and at least kMinOpenTxnBytes
// (max_open_bytes); each reader, which holds them while it assembles Txns, has room for twice
// as much (TxnBufferOptions).
inline constexpr uint64_t kMinOpenTxnBytes = 128ull << 20;
void ApplyMessageLimits(const ServerConfig& config, wal::WalOptions* wal);

// `opener`, calling `before_open` with each pchannel before it opens it (a test hook,
// server_main.h ServerHooks). An empty `before_open` returns `opener` as it is.
std::unique_ptr<wal::WalOpener> WithOpenHook(std::unique_ptr<wal::WalOpener> opener,
                                             std::function<void(const std::string&)> before_open);

}  // namespace kf::server
