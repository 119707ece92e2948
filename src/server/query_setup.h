// The query side of a standalone server or a streaming node from its configuration
// (docs/search.md): the background builder of the IVF indexes of full chunks and the registry
// the Search service answers from, with the node's growing-memory limit; and the WAL option
// that refuses Inserts above that limit.
//
// Thread-safety: plain functions. Ownership: the registry borrows `tso` (must outlive it).
#pragma once

#include <functional>
#include <memory>

#include "query/query_registry.h"
#include "server/config.h"
#include "storage/tso/timestamp_source.h"
#include "wal/wal.h"

namespace kf::server {

// `tso` and `before_wait` as QueryRegistryOptions says.
std::unique_ptr<query::QueryRegistry> MakeQueryRegistry(
    const ServerConfig& config, TimestampSource* tso,
    std::function<void(TimeTick)> before_wait = nullptr);

// Sets `wal->admit_inserts` to `queries`' limit; `queries` must outlive every WAL opened so.
void RefuseInsertsAboveGrowingLimit(const query::QueryRegistry* queries, wal::WalOptions* wal);

}  // namespace kf::server
