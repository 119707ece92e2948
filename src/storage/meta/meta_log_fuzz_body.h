// The body of the meta_log_fuzz libFuzzer target, shared with meta_log_fuzz_test so that CI
// exercises it with GCC on mutations of valid files.
//
// It drives the embedded metadata store's parsers of on-disk bytes (docs/meta-store-format.md:
// ParseMetaLog, DecodeMutation, DecodeSnapshot) the way recovery does, and checks their
// invariants: a corrupt file is DATA_LOSS, never a crash; the intact prefix of a log parses to
// the same mutations; what parses re-encodes to bytes that parse to the same thing; replaying
// parsed mutations into a KvState, or writing to a restored snapshot, fails with DATA_LOSS or
// succeeds, and never steps a counter past its range. The input is tried as a
// log, as a record's payload behind a valid frame and as a snapshot with and without a valid
// checksum, so that the decoders past the checksums are reached. A violated invariant aborts.
// Thread-safe: no shared state.
#pragma once

#include <string_view>

namespace kf::meta {

void RunMetaLogFuzzInput(std::string_view data);

}  // namespace kf::meta
