// The block objects of the objectstore WAL backend (byte layout in docs/objectstore-wal.md):
//
//   magic u32 "KFOB" | version u8 | kind u8 | reserved u16 | term u64 | segment u64 |
//   block u64 | masked crc32c u32 (over the 32 bytes before it)
//   then, for a data block, one record batch of the local WAL format whose base offset is the
//   block's first entry id (format/record_batch.h); a fence block ends there.
//
// A block names its own position (segment, block), so an object copied to or read from the
// wrong key is caught. Pure functions and a builder; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/strong_id.h"
#include "format/record_batch.h"

namespace kf::wal::objectstore {

inline constexpr size_t kBlockHeaderSize = 36;
// A fence block is exactly its header; a data block holds at least one entry.
inline constexpr size_t kFenceBlockSize = kBlockHeaderSize;
inline constexpr size_t kMinDataBlockSize =
    kBlockHeaderSize + format::kBatchHeaderSize + format::kEntryOverhead;

enum class BlockKind : uint8_t { kData = 1, kFence = 2 };

struct BlockHeader {
  BlockKind kind = BlockKind::kData;
  Term term;  // the writer (data) or the fencing writer (fence)
  uint64_t segment = 0;
  uint64_t block = 0;
};

// Builds one data block. Usage: Begin(); Add() x N; Finish(); then take bytes().
class BlockBuilder {
 public:
  void Begin(Term term, uint64_t segment, uint64_t block);
  void Add(std::string_view entry);
  void Finish();
  uint32_t count() const { return batch_.count(); }
  size_t size() const { return bytes_.size(); }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
  format::BatchBuilder batch_;
};

std::string EncodeFenceBlock(Term term, uint64_t segment, uint64_t block);

// Verifies `bytes` as the block at (segment, block): DATA_LOSS naming `what` (e.g. the key) on
// any mismatch — magic, version, crc, position, batch crc and framing, base offset. Calls
// `entry(id, data)` for each entry of a data block (ids are entry ids within the segment).
absl::Status DecodeBlock(std::string_view bytes, uint64_t segment, uint64_t block,
                         std::string_view what, BlockHeader* header,
                         const std::function<void(uint64_t, std::string_view)>& entry);

// Splits a compacted object (the concatenation of `count` data blocks) into its blocks, by
// their batch lengths; DATA_LOSS naming `what` when the lengths do not add up. Each piece is
// then verified by DecodeBlock.
absl::StatusOr<std::vector<std::string_view>> SplitMerged(std::string_view bytes, uint64_t count,
                                                          std::string_view what);

}  // namespace kf::wal::objectstore
