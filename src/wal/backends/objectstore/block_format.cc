#include "wal/backends/objectstore/block_format.h"

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/errors.h"
#include "wal/backends/objectstore/layout.h"

namespace kf::wal::objectstore {
namespace {

constexpr uint32_t kBlockMagic = 0x424f464b;  // "KFOB" in file order
constexpr uint8_t kBlockVersion = 1;
constexpr size_t kCrcOffset = 32;

void EncodeHeader(char* h, BlockKind kind, Term term, uint64_t segment, uint64_t block) {
  EncodeFixed32(h, kBlockMagic);
  h[4] = static_cast<char>(kBlockVersion);
  h[5] = static_cast<char>(kind);
  h[6] = 0;
  h[7] = 0;
  EncodeFixed64(h + 8, static_cast<uint64_t>(term.value()));
  EncodeFixed64(h + 16, segment);
  EncodeFixed64(h + 24, block);
  EncodeFixed32(h + kCrcOffset, crc32c::Mask(crc32c::Value(h, kCrcOffset)));
}

absl::Status Corrupt(std::string_view what, std::string_view why) {
  return StreamingError(StreamingCode::kDataLoss,
                        absl::StrCat("objectstore WAL block ", ToAbsl(what), ": ", ToAbsl(why)));
}

}  // namespace

void BlockBuilder::Begin(Term term, uint64_t segment, uint64_t block) {
  bytes_.resize(kBlockHeaderSize);
  EncodeHeader(bytes_.data(), BlockKind::kData, term, segment, block);
  batch_.Begin(&bytes_, EntryOf(block, 0));
}

void BlockBuilder::Add(std::string_view entry) { batch_.Add(entry); }

void BlockBuilder::Finish() { batch_.Finish(); }

std::string EncodeFenceBlock(Term term, uint64_t segment, uint64_t block) {
  std::string out(kFenceBlockSize, '\0');
  EncodeHeader(out.data(), BlockKind::kFence, term, segment, block);
  return out;
}

absl::Status DecodeBlock(std::string_view bytes, uint64_t segment, uint64_t block,
                         std::string_view what, BlockHeader* header,
                         const std::function<void(uint64_t, std::string_view)>& entry) {
  if (bytes.size() < kBlockHeaderSize) return Corrupt(what, "shorter than its header");
  const char* h = bytes.data();
  if (DecodeFixed32(h) != kBlockMagic) return Corrupt(what, "bad magic");
  if (static_cast<uint8_t>(h[4]) != kBlockVersion) return Corrupt(what, "unknown version");
  if (crc32c::Unmask(DecodeFixed32(h + kCrcOffset)) != crc32c::Value(h, kCrcOffset)) {
    return Corrupt(what, "header checksum mismatch");
  }
  const auto kind = static_cast<BlockKind>(h[5]);
  if ((kind != BlockKind::kData && kind != BlockKind::kFence) || h[6] != 0 || h[7] != 0) {
    return Corrupt(what, "unknown kind or flags");
  }
  header->kind = kind;
  header->term = Term(static_cast<int64_t>(DecodeFixed64(h + 8)));
  header->segment = DecodeFixed64(h + 16);
  header->block = DecodeFixed64(h + 24);
  if (header->segment != segment || header->block != block) {
    return Corrupt(what, absl::StrCat("holds segment ", header->segment, " block ", header->block));
  }
  bytes.remove_prefix(kBlockHeaderSize);
  if (kind == BlockKind::kFence) {
    return bytes.empty() ? absl::OkStatus() : Corrupt(what, "fence block with a payload");
  }
  format::BatchHeader batch;
  if (bytes.size() < format::kBatchHeaderSize || !format::ParseBatchHeader(bytes.data(), &batch)) {
    return Corrupt(what, "bad batch header");
  }
  if (batch.total_size() != bytes.size()) return Corrupt(what, "batch size mismatch");
  if (!format::VerifyBatch(bytes.data(), batch, bytes.data() + format::kBatchHeaderSize)) {
    return Corrupt(what, "batch checksum mismatch");
  }
  if (batch.base_offset != EntryOf(block, 0) || batch.count == 0 ||
      batch.count > kMaxEntriesPerBlock) {
    return Corrupt(what, "bad base offset or entry count");
  }
  return format::ForEachEntry(batch, bytes.substr(format::kBatchHeaderSize), entry);
}

absl::StatusOr<std::vector<std::string_view>> SplitMerged(std::string_view bytes, uint64_t count,
                                                          std::string_view what) {
  std::vector<std::string_view> out;
  while (!bytes.empty() && out.size() < count) {
    format::BatchHeader batch;
    if (bytes.size() < kBlockHeaderSize + format::kBatchHeaderSize ||
        !format::ParseBatchHeader(bytes.data() + kBlockHeaderSize, &batch) ||
        bytes.size() < kBlockHeaderSize + batch.total_size()) {
      return Corrupt(what, absl::StrCat("compacted block ", out.size(), " is cut short"));
    }
    const size_t size = kBlockHeaderSize + batch.total_size();
    out.push_back(bytes.substr(0, size));
    bytes.remove_prefix(size);
  }
  if (out.size() != count || !bytes.empty()) {
    return Corrupt(what, absl::StrCat("holds ", out.size(), " blocks, expected ", count));
  }
  return out;
}

}  // namespace kf::wal::objectstore
