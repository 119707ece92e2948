// The fuzz body for the local WAL's on-disk parsers (docs/local-wal-format.md): record
// batches, segment and term file names, seal records. Bytes on disk are untrusted input —
// a torn write, a flipped bit, another program's file — so every parser must reject garbage
// cleanly and accept only what its encoder could have written.
//
// Shared by the libFuzzer target (format_fuzz.cc) and a GoogleTest driver, so CI checks the
// invariants without clang. Aborts (via a failed check) when an invariant breaks.
#pragma once

#include <string_view>

namespace kf::wal::local {

void RunFormatFuzzInput(std::string_view data);

}  // namespace kf::wal::local
