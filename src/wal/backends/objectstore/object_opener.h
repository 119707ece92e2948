// The objectstore WAL backend (docs/semantics.md §4 item 2, Woodpecker's MemoryBuffer mode):
// appends are batched into immutable block objects in an object store, acknowledged once their
// block (and every block before it) is stored; segments and fencing live in the metadata store.
// Format, protocols and tuning: docs/objectstore-wal.md.
//
// Thread-safety: the opener and the backends it returns are thread-safe.
// Ownership: the stores in the options are borrowed and must outlive the opener and every
// backend and scanner.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "storage/meta/meta_store.h"
#include "storage/object/object_store.h"
#include "wal/backend.h"

namespace kf::wal::objectstore {

struct ObjectOpenerOptions {
  object::ObjectStore* store = nullptr;
  meta::MetaStore* meta = nullptr;
  std::string root = "wal";                         // object keys: <root>/<pchannel>/...
  std::string meta_prefix = "kf/wal/objectstore/";  // metadata key: <meta_prefix><pchannel>

  // Adaptive flush: a block is uploaded as soon as no upload is running; while uploads run, it
  // waits until one finishes, it reaches max_block_bytes, or its oldest entry waited
  // flush_delay — then it goes up in parallel, up to max_parallel_uploads at once.
  uint64_t max_block_bytes = 4ull << 20;
  absl::Duration flush_delay = absl::Milliseconds(5);
  int max_parallel_uploads = 8;

  // Roll to a new segment past this size or age (checked when a block is closed).
  uint64_t segment_bytes = 256ull << 20;
  absl::Duration segment_age = absl::Minutes(10);

  uint64_t max_queue_bytes = 256ull << 20;  // queued + uploading bytes before RESOURCE_EXHAUSTED
  uint64_t max_entry_bytes = 80ull << 20;   // larger entries: INVALID_ARGUMENT

  absl::Duration request_timeout = absl::Seconds(10);  // one store request
  // A block that cannot be stored for this long fails the log (appends then fail with the
  // cause; the owner reopens it). Until then uploads are retried with backoff.
  absl::Duration upload_timeout = absl::Seconds(60);
  absl::Duration open_timeout = absl::Seconds(30);  // recovery on Open

  // A segment this writer sealed whose blocks average below compact_below_bytes is compacted:
  // runs of its blocks become objects of up to merged_object_bytes. 0 turns compaction off.
  uint64_t compact_below_bytes = 1ull << 20;
  uint64_t merged_object_bytes = 16ull << 20;

  uint64_t cache_bytes = 32ull << 20;  // recently written blocks kept for readers
  absl::Duration poll_interval = absl::Milliseconds(20);  // read-only readers at the end
};

// Open() errors: INVALID_ARGUMENT (bad pchannel name or options), FENCED (a higher term opened
// the log, or one opened it while this open ran), NOT_FOUND (read-only open of a log never
// written), DATA_LOSS (corrupt metadata or blocks), UNAVAILABLE / DEADLINE_EXCEEDED (a store
// unreachable for open_timeout).
std::unique_ptr<WalOpener> NewObjectOpener(ObjectOpenerOptions options);

}  // namespace kf::wal::objectstore
