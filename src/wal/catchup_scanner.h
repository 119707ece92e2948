// The catch-up scanner: reads persisted messages from the backend in WAL order (= timetick
// order), drops other vchannels' messages, and marks each consumed message with a
// `wal.catchup_consume` span (docs/tracing.md §5). The tailing path over the write-ahead buffer
// comes with the full WAL semantics; until then every read is a catch-up read.
#pragma once

#include <memory>
#include <string>

#include "wal/backend.h"
#include "wal/wal.h"

namespace kf::wal {

// `vchannel` empty = the whole pchannel. Not thread-safe (one reader).
std::unique_ptr<Scanner> NewCatchupScanner(std::unique_ptr<BackendScanner> backend,
                                           std::string vchannel);

}  // namespace kf::wal
