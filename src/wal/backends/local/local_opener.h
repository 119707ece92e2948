// The local-disk WAL backend (docs/semantics.md §4 item 1): segmented log files per pchannel,
// CRC32C record batches, group commit with fdatasync, fencing by term across processes.
// Format and protocols: docs/local-wal-format.md.
//
// Thread-safety: the opener and the backends it returns are thread-safe.
// Ownership: `fs` in the options is borrowed and must outlive the opener and every backend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "storage/fs/file_system.h"
#include "wal/backend.h"

namespace kf::wal::local {

struct LocalOpenerOptions {
  std::string root;                         // <root>/<pchannel>/ holds one log
  fs::FileSystem* fs = nullptr;             // null = the POSIX file system
  uint64_t segment_bytes = 64ull << 20;     // roll to a new segment past this size
  uint64_t max_batch_bytes = 4ull << 20;    // one record batch (one write + fdatasync) at most
  uint64_t max_queue_bytes = 256ull << 20;  // queued + in-flight bytes before RESOURCE_EXHAUSTED
  uint64_t max_entry_bytes = 80ull << 20;   // larger entries: INVALID_ARGUMENT
};

// Open() errors: INVALID_ARGUMENT (bad pchannel name), FENCED (a higher term exists, on disk
// or open in this process), FAILED_PRECONDITION (the same pchannel and term is already open
// in this opener), NOT_FOUND (read-only open of a pchannel that was never written),
// DATA_LOSS (corruption found by recovery), I/O errors.
std::unique_ptr<WalOpener> NewLocalOpener(LocalOpenerOptions options);

}  // namespace kf::wal::local
