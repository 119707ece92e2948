// The catch-up scanner: reads persisted messages from the backend in WAL order (= timetick
// order), drops other vchannels' messages, and marks each consumed message with a
// `wal.catchup_consume` span (docs/tracing.md §5). A reader uses it until it has caught up, then
// tails the write-ahead buffer (buffer/switchable_scanner.h).
#pragma once

#include <memory>
#include <string>

#include "wal/backend.h"
#include "wal/wal.h"

namespace kf::wal {

// `vchannel` empty = the whole pchannel; `traced` false: no spans (ScanOptions::internal).
// Not thread-safe (one reader).
std::unique_ptr<Scanner> NewCatchupScanner(std::unique_ptr<BackendScanner> backend,
                                           std::string vchannel, bool traced = true);

}  // namespace kf::wal
