// On-disk names of the local WAL backend (docs/local-wal-format.md):
//   <root>/<pchannel>/<base:020>-<term:020>.log   segment files
//   <root>/<pchannel>/fence/<term:020>            one empty file per fencing term
//   <root>/<pchannel>/seal/<term:020>             seal record of a fenced term
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/strong_id.h"

namespace kf::wal::local {

inline constexpr std::string_view kFenceDir = "fence";
inline constexpr std::string_view kSealDir = "seal";

std::string SegmentFileName(uint64_t base, Term term);
// False for any other name (temp files, foreign files).
bool ParseSegmentFileName(std::string_view name, uint64_t* base, Term* term);

// Fence and seal files are named by their term alone.
std::string TermFileName(Term term);
bool ParseTermFileName(std::string_view name, Term* term);

// Written by the owner of a later term: term `sealed_term` ended in segment
// (`segment_base`, `sealed_term`) after `length` bytes, i.e. at entry offset `end_offset`.
// Segments of that term with a higher base are garbage of a fenced writer.
struct SealRecord {
  Term sealed_term;
  uint64_t segment_base = 0;
  uint64_t length = 0;
  uint64_t end_offset = 0;
};
std::string EncodeSealRecord(const SealRecord& seal);
// DATA_LOSS on a bad magic, version, size or checksum.
absl::StatusOr<SealRecord> DecodeSealRecord(std::string_view bytes, std::string_view path);

}  // namespace kf::wal::local
