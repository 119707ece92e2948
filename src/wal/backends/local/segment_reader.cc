#include "wal/backends/local/segment_reader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/coding.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace kf::wal::local {
namespace {

// Sequential reads go through a buffer this large so catching up costs few syscalls.
constexpr uint64_t kReadAhead = 1 << 20;

absl::Status DataLoss(const std::string& path, uint64_t pos, std::string_view what) {
  return StreamingError(
      StreamingCode::kDataLoss,
      absl::StrCat("local WAL segment ", path, " at byte ", pos, ": ", std::string(what)));
}

// True if a batch with a valid crc starts anywhere in `bytes` (a segment's rest after damage).
bool ContainsValidBatch(std::string_view bytes) {
  for (size_t p = 0; p + format::kBatchHeaderSize <= bytes.size(); ++p) {
    if (DecodeFixed32(bytes.data() + p) != format::kBatchMagic) continue;
    format::BatchHeader h;
    if (!format::ParseBatchHeader(bytes.data() + p, &h)) continue;
    if (h.total_size() > bytes.size() - p) continue;
    if (format::VerifyBatch(bytes.data() + p, h, bytes.data() + p + format::kBatchHeaderSize))
      return true;
  }
  return false;
}

// True if [pos, limit) of `file` holds only zero bytes: the unwritten rest of a preallocated
// segment. Reads in chunks so a mostly empty 64 MiB segment costs no 64 MiB buffer.
absl::StatusOr<bool> AllZero(const fs::RandomAccessFile* file, uint64_t pos, uint64_t limit) {
  std::string chunk(std::min<uint64_t>(kReadAhead, limit - pos), '\0');
  while (pos < limit) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk.size(), limit - pos));
    ASSIGN_OR_RETURN(size_t got, file->ReadAt(pos, want, chunk.data()));
    if (got == 0) return true;  // the file is shorter than `limit`
    if (std::any_of(chunk.data(), chunk.data() + got, [](char c) { return c != 0; })) {
      return false;
    }
    pos += got;
  }
  return true;
}

}  // namespace

BatchReader::BatchReader(const fs::RandomAccessFile* file, std::string path)
    : file_(file), path_(std::move(path)) {}

absl::StatusOr<bool> BatchReader::Fill(uint64_t pos, uint64_t n, uint64_t limit) {
  if (pos + n > limit) return false;
  if (pos >= buf_pos_ && pos + n <= buf_pos_ + buf_.size()) return true;
  uint64_t want = std::min(std::max(n, kReadAhead), limit - pos);
  buf_.resize(want);
  ASSIGN_OR_RETURN(size_t got, file_->ReadAt(pos, want, buf_.data()));
  buf_.resize(got);
  buf_pos_ = pos;
  return got >= n;
}

absl::StatusOr<BatchReader::Result> BatchReader::Read(uint64_t pos, uint64_t limit,
                                                      format::BatchHeader* header,
                                                      std::string_view* payload) {
  ASSIGN_OR_RETURN(bool have_header, Fill(pos, format::kBatchHeaderSize, limit));
  if (!have_header) return Result::kIncomplete;
  const char* h = buf_.data() + (pos - buf_pos_);
  // On kCorrupt the buffer goes: in a live preallocated segment the bytes read may be zeros
  // that the writer has overwritten since, and a retry must see the file again.
  if (!format::ParseBatchHeader(h, header)) {
    buf_.clear();
    return Result::kCorrupt;
  }
  ASSIGN_OR_RETURN(bool have_all, Fill(pos, header->total_size(), limit));
  if (!have_all) return Result::kIncomplete;
  h = buf_.data() + (pos - buf_pos_);  // Fill may have moved the buffer
  if (!format::VerifyBatch(h, *header, h + format::kBatchHeaderSize)) {
    buf_.clear();
    return Result::kCorrupt;
  }
  *payload = std::string_view(h + format::kBatchHeaderSize, header->payload_len);
  return Result::kOk;
}

absl::StatusOr<ScanResult> ScanSegment(const fs::RandomAccessFile* file, const std::string& path,
                                       uint64_t limit, uint64_t base) {
  BatchReader reader(file, path);
  ScanResult out;
  out.end_offset = base;
  uint64_t pos = 0;
  while (pos < limit) {
    format::BatchHeader h;
    std::string_view payload;
    ASSIGN_OR_RETURN(auto r, reader.Read(pos, limit, &h, &payload));
    if (r != BatchReader::Result::kOk) {
      // Torn tail or damage? Damage is anything valid after the bad spot; zeros up to the
      // limit are a preallocated segment's unwritten rest.
      ASSIGN_OR_RETURN(bool zeros, AllZero(file, pos, limit));
      bool valid_after = false;
      if (!zeros) {
        std::string rest(limit - pos - 1, '\0');
        ASSIGN_OR_RETURN(size_t got, file->ReadAt(pos + 1, rest.size(), rest.data()));
        rest.resize(got);
        valid_after = ContainsValidBatch(rest);
      }
      if (!valid_after) {
        out.torn = true;
        break;
      }
      // A writer still appending (a fenced one while its successor seals this segment) may
      // have completed this batch since it was read: it writes batches in order, so later
      // ones are only visible once this one is. Read it again before calling it damage.
      ASSIGN_OR_RETURN(r, reader.Read(pos, limit, &h, &payload));
      if (r != BatchReader::Result::kOk) {
        return DataLoss(path, pos, "invalid batch followed by valid data");
      }
    }
    if (h.base_offset != out.end_offset) {
      return DataLoss(
          path, pos,
          absl::StrCat("batch base offset ", h.base_offset, ", expected ", out.end_offset));
    }
    absl::Status s = format::ForEachEntry(h, payload, [](uint64_t, std::string_view) {});
    if (!s.ok()) return DataLoss(path, pos, ToStd(s.message()));
    MaybeAddIndexPoint(&out.index, {h.base_offset, pos});
    pos += h.total_size();
    out.end_offset += h.count;
    out.valid_end = pos;
  }
  return out;
}

absl::Status HopIndex(const fs::RandomAccessFile* file, const std::string& path, uint64_t from_pos,
                      uint64_t limit, uint64_t* offset, uint64_t* end_pos,
                      std::vector<IndexPoint>* index) {
  uint64_t pos = from_pos;
  char hdr[format::kBatchHeaderSize];
  while (pos + format::kBatchHeaderSize <= limit) {
    ASSIGN_OR_RETURN(size_t got, file->ReadAt(pos, format::kBatchHeaderSize, hdr));
    format::BatchHeader h;
    if (got < format::kBatchHeaderSize || !format::ParseBatchHeader(hdr, &h)) break;
    if (h.base_offset != *offset || pos + h.total_size() > limit) break;
    MaybeAddIndexPoint(index, {h.base_offset, pos});
    pos += h.total_size();
    *offset += h.count;
  }
  (void)path;
  *end_pos = pos;
  return absl::OkStatus();
}

}  // namespace kf::wal::local
