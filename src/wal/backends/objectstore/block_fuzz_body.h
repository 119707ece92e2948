// The fuzz body for the objectstore WAL's block objects (block_format.h). Objects are untrusted
// input — a truncated or damaged upload, another program's key — so DecodeBlock must reject
// garbage cleanly and accept only what BlockBuilder / EncodeFenceBlock could have written
// (a decoded block re-encodes to the same bytes).
//
// Shared by the libFuzzer target (block_fuzz.cc) and a GoogleTest driver. Aborts when an
// invariant breaks.
#pragma once

#include <string_view>

namespace kf::wal::objectstore {

void RunBlockFuzzInput(std::string_view data);

}  // namespace kf::wal::objectstore
