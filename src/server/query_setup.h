// The query side of a standalone server or a streaming node from its configuration
// (docs/search.md): the background builder of the IVF indexes of full chunks and the registry
// the Search service answers from, with the node's growing-memory limit; and the WAL option
// that refuses Inserts above that limit.
//
// Recovery storage (docs/recovery-storage.md): sealed segments go to config.object_store, or in
// standalone to file://<data-dir>/objects; checkpoints to the metadata store. A node without an
// object store keeps no checkpoints (its followers replay whole WALs).
//
// Thread-safety: plain functions. Ownership: the registry borrows `tso`, `segments` and `meta`
// (they must outlive it).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "query/query_registry.h"
#include "server/config.h"
#include "storage/meta/meta_store.h"
#include "storage/object/object_store.h"
#include "storage/tso/timestamp_source.h"
#include "wal/wal.h"

namespace kf::server {

// The store sealed segments go to: config.object_store when set, else `default_dir` (a
// directory) unless it is empty; null when neither is given.
absl::StatusOr<std::unique_ptr<object::ObjectStore>> OpenSegmentStore(
    const ServerConfig& config, const std::string& default_dir);

// `tso` and `before_wait` as QueryRegistryOptions says; `segments` null: no recovery storage.
std::unique_ptr<query::QueryRegistry> MakeQueryRegistry(
    const ServerConfig& config, TimestampSource* tso, object::ObjectStore* segments,
    meta::MetaStore* meta, std::function<void(TimeTick)> before_wait = nullptr);

// Sets `wal->admit_inserts` to `queries`' growing-memory limit and, with recovery storage,
// `wal->load_checkpoint` to the pchannel checkpoints' WAL state; `queries` must outlive every
// WAL opened so.
void ConnectWalToQueries(const query::QueryRegistry* queries, wal::WalOptions* wal);

}  // namespace kf::server
