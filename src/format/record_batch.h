// The record-batch format of local WAL segments (byte layout in docs/local-wal-format.md):
//
//   magic u32 | version u8 | flags u8 | reserved u16 | masked crc32c u32 |
//   payload_len u32 | base_offset u64 | count u32 | payload
//   payload = count x (length u32 | bytes)
//
// The crc covers everything after the crc field (payload_len .. end of payload). All integers
// little-endian. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace kf::format {

inline constexpr uint32_t kBatchMagic = 0x4257464b;  // "KFWB" in file order
inline constexpr uint8_t kBatchVersion = 1;
inline constexpr size_t kBatchHeaderSize = 28;
inline constexpr size_t kEntryOverhead = 4;

struct BatchHeader {
  uint32_t payload_len = 0;
  uint64_t base_offset = 0;
  uint32_t count = 0;
  uint32_t masked_crc = 0;
  uint64_t total_size() const { return kBatchHeaderSize + payload_len; }
};

// The steps of building a batch, for a caller that keeps the state itself (the local WAL builds
// its batches across many appends): PutBatchHeader into kBatchHeaderSize reserved bytes, then
// the entries (length u32 | bytes) behind it, then SealBatch on the batch's bytes to fill in
// length, count and crc.
void PutBatchHeader(char* header, uint64_t base_offset);
void SealBatch(char* batch, size_t size, uint32_t count);

// Builds batches into a caller-owned buffer without intermediate copies.
// Usage: Begin(buf, base); Add(...) x N; Finish(). Not thread-safe.
class BatchBuilder {
 public:
  void Begin(std::string* out, uint64_t base_offset);
  void Add(std::string_view entry);
  // Writes length, count and crc into the header reserved by Begin.
  void Finish();
  uint32_t count() const { return count_; }
  // Bytes of this batch so far (header included).
  size_t size() const { return out_->size() - start_; }

 private:
  std::string* out_ = nullptr;
  size_t start_ = 0;
  uint32_t count_ = 0;
};

// Parses the fixed header at `p` (kBatchHeaderSize bytes). False on a bad magic or version
// or non-zero flags/reserved bytes.
bool ParseBatchHeader(const char* p, BatchHeader* header);

// True iff the crc over header fields and `payload` (header.payload_len bytes) matches.
bool VerifyBatch(const char* header_bytes, const BatchHeader& header, const char* payload);

// Calls `fn(offset, data)` for each entry of a verified batch. DATA_LOSS if the entry lengths
// do not add up to the payload (a writer bug or a crc collision).
absl::Status ForEachEntry(const BatchHeader& header, std::string_view payload,
                          const std::function<void(uint64_t, std::string_view)>& fn);

}  // namespace kf::format
