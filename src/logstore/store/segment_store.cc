#include "logstore/store/segment_store.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/log_name.h"
#include "format/record_batch.h"

namespace kf::logstore {
namespace {

using format::BatchBuilder;
using format::BatchHeader;
using format::kBatchHeaderSize;

constexpr std::string_view kLogExt = ".log";
constexpr std::string_view kFenceExt = ".fence";
constexpr std::string_view kSealExt = ".seal";
constexpr std::string_view kUploadedExt = ".uploaded";
constexpr uint64_t kMaxBatchBytes = 4ull << 20;

absl::StatusOr<std::optional<uint64_t>> ReadNumberFile(fs::FileSystem* fs,
                                                       const std::string& path) {
  auto text = fs::ReadFileToString(fs, path);
  if (absl::IsNotFound(text.status())) return std::optional<uint64_t>();
  if (!text.ok()) return text.status();
  uint64_t v = 0;
  if (!absl::SimpleAtoi(*text, &v)) {
    return StreamingError(StreamingCode::kDataLoss, absl::StrCat("malformed ", path));
  }
  return std::optional<uint64_t>(v);
}

// Reads one batch at `pos`: false (no error) at a torn or corrupt batch.
absl::StatusOr<bool> ReadBatch(const fs::RandomAccessFile& file, uint64_t pos, uint64_t size,
                               BatchHeader* header, std::string* bytes) {
  if (pos + kBatchHeaderSize > size) return false;
  bytes->resize(kBatchHeaderSize);
  ASSIGN_OR_RETURN(size_t n, file.ReadAt(pos, kBatchHeaderSize, bytes->data()));
  if (n < kBatchHeaderSize || !format::ParseBatchHeader(bytes->data(), header)) return false;
  if (pos + header->total_size() > size) return false;
  bytes->resize(header->total_size());
  ASSIGN_OR_RETURN(n, file.ReadAt(pos + kBatchHeaderSize, header->payload_len,
                                  bytes->data() + kBatchHeaderSize));
  if (n < header->payload_len) return false;
  return format::VerifyBatch(bytes->data(), *header, bytes->data() + kBatchHeaderSize);
}

}  // namespace

std::string SegmentName(uint64_t segment) { return absl::StrFormat("%020d", segment); }

SegmentStore::SegmentStore(SegmentStoreOptions options)
    : options_(std::move(options)),
      fs_(options_.fs != nullptr ? options_.fs : fs::DefaultFileSystem()) {}

SegmentStore::~SegmentStore() = default;

absl::StatusOr<std::unique_ptr<SegmentStore>> SegmentStore::Open(SegmentStoreOptions options) {
  std::unique_ptr<SegmentStore> store(new SegmentStore(std::move(options)));
  RETURN_IF_ERROR(store->fs_->CreateDirs(store->options_.dir));
  RETURN_IF_ERROR(store->Recover());
  return store;
}

absl::Status SegmentStore::Recover() {
  ASSIGN_OR_RETURN(auto logs, fs_->GetChildren(options_.dir));
  absl::MutexLock l(&mu_);
  for (const std::string& log : logs) {
    if (!format::ValidateLogName(log).ok()) continue;
    const std::string log_dir = fs::JoinPath(options_.dir, log);
    ASSIGN_OR_RETURN(auto names, fs_->GetChildren(log_dir));
    for (const std::string& name : names) {
      // Every segment has a .log or a .fence file (a fence may precede any entry).
      std::string_view base = name;
      if (absl::EndsWith(ToAbsl(base), ToAbsl(kLogExt))) {
        base.remove_suffix(kLogExt.size());
      } else if (absl::EndsWith(ToAbsl(base), ToAbsl(kFenceExt))) {
        base.remove_suffix(kFenceExt.size());
      } else {
        continue;
      }
      uint64_t segment = 0;
      if (base.size() != 20 || !absl::SimpleAtoi(ToAbsl(base), &segment)) continue;
      SegmentKey key{log, segment};
      if (segments_.contains(key)) continue;
      auto seg = std::make_shared<Segment>();
      seg->path = fs::JoinPath(log_dir, SegmentName(segment));
      RETURN_IF_ERROR(RecoverSegment(log, segment, seg.get()));
      segments_.emplace(std::move(key), std::move(seg));
    }
  }
  return absl::OkStatus();
}

absl::Status SegmentStore::RecoverSegment(const std::string& log, uint64_t segment, Segment* seg) {
  absl::MutexLock l(&seg->mu);
  ASSIGN_OR_RETURN(auto fence, ReadNumberFile(fs_, seg->path + std::string(kFenceExt)));
  seg->fence_epoch = fence.value_or(0);
  ASSIGN_OR_RETURN(seg->sealed_end, ReadNumberFile(fs_, seg->path + std::string(kSealExt)));
  ASSIGN_OR_RETURN(bool uploaded, fs_->FileExists(seg->path + std::string(kUploadedExt)));
  seg->uploaded = uploaded;
  const std::string log_path = seg->path + std::string(kLogExt);
  ASSIGN_OR_RETURN(bool exists, fs_->FileExists(log_path));
  if (!exists) return absl::OkStatus();
  ASSIGN_OR_RETURN(auto file, fs_->OpenRandomAccess(log_path));
  ASSIGN_OR_RETURN(uint64_t size, file->Size());
  uint64_t pos = 0;
  BatchHeader header;
  std::string bytes;
  for (;;) {
    ASSIGN_OR_RETURN(bool ok, ReadBatch(*file, pos, size, &header, &bytes));
    // A batch must continue the entries exactly; anything else is a torn tail.
    if (!ok || header.base_offset != seg->end || header.count == 0) break;
    seg->index.push_back({header.base_offset, pos, header.count});
    seg->end += header.count;
    pos += header.total_size();
  }
  if (pos < size) {
    // Bytes no completed fdatasync covered (or damage after them): never acknowledged.
    ASSIGN_OR_RETURN(auto w, fs_->OpenWritable(log_path, fs::OpenMode::kAppendExisting));
    RETURN_IF_ERROR(w->Truncate(pos));
    RETURN_IF_ERROR(w->Sync());
    RETURN_IF_ERROR(w->Close());
  }
  seg->file_size = pos;
  seg->reader = std::move(file);
  (void)log;
  (void)segment;
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<SegmentStore::Segment>> SegmentStore::Find(std::string_view log,
                                                                          uint64_t segment,
                                                                          bool create) {
  RETURN_IF_ERROR(format::ValidateLogName(log));
  SegmentKey key{std::string(log), segment};
  {
    absl::MutexLock l(&mu_);
    auto it = segments_.find(key);
    if (it != segments_.end()) return it->second;
    if (!create) {
      return absl::NotFoundError(absl::StrCat("logstore: no segment ", ToAbsl(log), "/", segment));
    }
  }
  const std::string log_dir = fs::JoinPath(options_.dir, log);
  RETURN_IF_ERROR(fs_->CreateDirs(log_dir));
  absl::MutexLock l(&mu_);
  auto& slot = segments_[key];
  if (slot == nullptr) {
    slot = std::make_shared<Segment>();
    slot->path = fs::JoinPath(log_dir, SegmentName(segment));
  }
  return slot;
}

absl::Status SegmentStore::CheckEpoch(std::string_view log, uint64_t segment, const Segment& seg,
                                      uint64_t epoch) {
  if (epoch < seg.fence_epoch) {
    return FencedError(absl::StrCat("logstore: ", ToAbsl(log), "/", segment, " is fenced at epoch ",
                                    seg.fence_epoch, " (writer epoch ", epoch, ")"));
  }
  if (seg.deleted) {
    return absl::NotFoundError(
        absl::StrCat("logstore: segment ", ToAbsl(log), "/", segment, " deleted"));
  }
  return absl::OkStatus();
}

absl::Status SegmentStore::EnsureFile(Segment* seg) {
  if (seg->file != nullptr) return absl::OkStatus();
  const std::string path = seg->path + std::string(kLogExt);
  ASSIGN_OR_RETURN(auto file, fs_->OpenWritable(path, fs::OpenMode::kCreateOrAppend));
  if (file->Size() != seg->file_size) {
    // Recovery cut the file; an un-synced tail can only follow a crash, never a live handle.
    RETURN_IF_ERROR(file->Truncate(seg->file_size));
  }
  // The file's creation must survive a crash before any entry in it is acknowledged.
  RETURN_IF_ERROR(fs_->SyncDir(fs::DirName(path)));
  ASSIGN_OR_RETURN(auto reader, fs_->OpenRandomAccess(path));
  seg->file = std::move(file);
  seg->reader = std::move(reader);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> SegmentStore::AddEntries(std::string_view log, uint64_t segment,
                                                  uint64_t epoch, uint64_t first,
                                                  const std::vector<std::string_view>& entries) {
  ASSIGN_OR_RETURN(auto seg, Find(log, segment, /*create=*/true));
  absl::MutexLock l(&seg->mu);
  RETURN_IF_ERROR(CheckEpoch(log, segment, *seg, epoch));
  if (seg->sealed_end.has_value()) {
    if (first + entries.size() <= *seg->sealed_end) return seg->end;  // a late resend
    return FencedError(
        absl::StrCat("logstore: ", ToAbsl(log), "/", segment, " is sealed at ", *seg->sealed_end));
  }
  if (!seg->error.ok()) {
    return absl::InternalError(absl::StrCat("logstore: ", ToAbsl(log), "/", segment,
                                            ": earlier write error: ", seg->error.message()));
  }
  if (first > seg->end) {
    return absl::OutOfRangeError(absl::StrCat("logstore: ", ToAbsl(log), "/", segment,
                                              " durable end is ", seg->end, ", not ", first));
  }
  seg->seen_epoch = std::max(seg->seen_epoch, epoch);
  size_t skip = static_cast<size_t>(std::min<uint64_t>(seg->end - first, entries.size()));
  if (skip == entries.size()) return seg->end;
  absl::Status s = EnsureFile(seg.get());
  std::string buf;
  std::vector<BatchPos> added;
  if (s.ok()) {
    uint64_t next = seg->end;
    size_t i = skip;
    while (i < entries.size()) {
      const size_t start = buf.size();
      BatchBuilder batch;
      batch.Begin(&buf, next);
      do {
        batch.Add(entries[i]);
        ++i;
      } while (i < entries.size() && batch.size() + entries[i].size() + 4 <= kMaxBatchBytes);
      batch.Finish();
      added.push_back({next, seg->file_size + start, batch.count()});
      next += batch.count();
    }
    s = seg->file->Append(buf);
    if (s.ok()) s = seg->file->Sync();
  }
  if (!s.ok()) {
    seg->error = s;
    return absl::InternalError(
        absl::StrCat("logstore: ", ToAbsl(log), "/", segment, ": write failed: ", s.message()));
  }
  for (const auto& b : added) {
    seg->index.push_back(b);
    seg->end += b.count;
  }
  seg->file_size += buf.size();
  return seg->end;
}

absl::StatusOr<SegmentStore::FenceResult> SegmentStore::Fence(std::string_view log,
                                                              uint64_t segment, uint64_t epoch) {
  ASSIGN_OR_RETURN(auto seg, Find(log, segment, /*create=*/true));
  absl::MutexLock l(&seg->mu);
  RETURN_IF_ERROR(CheckEpoch(log, segment, *seg, epoch));
  if (epoch > seg->fence_epoch) {
    RETURN_IF_ERROR(
        fs::WriteFileAtomically(fs_, seg->path + std::string(kFenceExt), absl::StrCat(epoch)));
    seg->fence_epoch = epoch;
  }
  return FenceResult{seg->end, seg->file_size};
}

absl::StatusOr<SegmentStore::ReadResult> SegmentStore::Read(std::string_view log, uint64_t segment,
                                                            uint64_t from, uint64_t to,
                                                            uint64_t max_bytes) {
  ASSIGN_OR_RETURN(auto seg, Find(log, segment, /*create=*/false));
  std::shared_ptr<fs::RandomAccessFile> reader;
  std::vector<BatchPos> batches;
  uint64_t end = 0;
  uint64_t limit_bytes = 0;
  {
    absl::MutexLock l(&seg->mu);
    if (seg->deleted) {
      return absl::NotFoundError(
          absl::StrCat("logstore: segment ", ToAbsl(log), "/", segment, " deleted"));
    }
    end = seg->end;
    if (seg->sealed_end.has_value()) end = std::min(end, *seg->sealed_end);
    to = std::min(to, end);
    if (from >= to) return ReadResult{{}, end};
    auto it = std::upper_bound(seg->index.begin(), seg->index.end(), from,
                               [](uint64_t v, const BatchPos& b) { return v < b.base; });
    --it;  // index[0].base == 0 <= from
    for (; it != seg->index.end() && it->base < to; ++it) batches.push_back(*it);
    reader = seg->reader;
    limit_bytes = seg->file_size;
  }
  if (reader == nullptr) return ReadResult{{}, end};
  if (max_bytes == 0) max_bytes = options_.max_read_bytes;
  ReadResult out;
  out.durable_end = end;
  uint64_t bytes = 0;
  bool full = false;
  BatchHeader header;
  std::string buf;
  for (const BatchPos& b : batches) {
    ASSIGN_OR_RETURN(bool ok, ReadBatch(*reader, b.pos, limit_bytes, &header, &buf));
    if (!ok || header.base_offset != b.base) {
      return StreamingError(
          StreamingCode::kDataLoss,
          absl::StrCat("logstore: ", ToAbsl(log), "/", segment, ": corrupt batch at byte ", b.pos));
    }
    absl::Status s =
        format::ForEachEntry(header, std::string_view(buf).substr(kBatchHeaderSize),
                             [&](uint64_t id, std::string_view data) {
                               if (full || id < from || id >= to) return;
                               if (!out.entries.empty() && bytes + data.size() > max_bytes) {
                                 full = true;
                                 return;
                               }
                               bytes += data.size();
                               out.entries.emplace_back(data);
                             });
    RETURN_IF_ERROR(s);
    if (full || bytes >= max_bytes) break;
  }
  return out;
}

absl::Status SegmentStore::Seal(std::string_view log, uint64_t segment, uint64_t epoch,
                                uint64_t end) {
  ASSIGN_OR_RETURN(auto seg, Find(log, segment, /*create=*/true));
  absl::MutexLock l(&seg->mu);
  RETURN_IF_ERROR(CheckEpoch(log, segment, *seg, epoch));
  if (seg->sealed_end.has_value()) return absl::OkStatus();
  RETURN_IF_ERROR(
      fs::WriteFileAtomically(fs_, seg->path + std::string(kSealExt), absl::StrCat(end)));
  seg->sealed_end = end;
  return absl::OkStatus();
}

absl::Status SegmentStore::Delete(std::string_view log, uint64_t segment) {
  RETURN_IF_ERROR(format::ValidateLogName(log));
  std::shared_ptr<Segment> seg;
  {
    absl::MutexLock l(&mu_);
    auto it = segments_.find(SegmentKey{std::string(log), segment});
    if (it == segments_.end()) return absl::OkStatus();
    seg = it->second;
    segments_.erase(it);
  }
  absl::MutexLock l(&seg->mu);
  seg->deleted = true;
  if (seg->file != nullptr) (void)seg->file->Close();
  seg->file.reset();
  seg->reader.reset();
  // The log file first: a crash in between leaves a fence/seal without entries, which reads
  // as an empty segment, never as entries without their fence.
  for (std::string_view ext : {kLogExt, kUploadedExt, kSealExt, kFenceExt}) {
    absl::Status s = fs_->RemoveFile(seg->path + std::string(ext));
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  return fs_->SyncDir(fs::DirName(seg->path));
}

std::vector<std::pair<SegmentKey, uint64_t>> SegmentStore::PendingUploads() {
  std::vector<std::pair<SegmentKey, std::shared_ptr<Segment>>> all;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [k, v] : segments_) all.emplace_back(k, v);
  }
  std::vector<std::pair<SegmentKey, uint64_t>> out;
  for (auto& [k, seg] : all) {
    absl::MutexLock l(&seg->mu);
    if (seg->sealed_end.has_value() && !seg->uploaded && !seg->deleted &&
        seg->end >= *seg->sealed_end) {
      out.emplace_back(k, *seg->sealed_end);
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.log, a.first.segment) < std::tie(b.first.log, b.first.segment);
  });
  return out;
}

absl::Status SegmentStore::MarkUploaded(const SegmentKey& key) {
  ASSIGN_OR_RETURN(auto seg, Find(key.log, key.segment, /*create=*/false));
  absl::MutexLock l(&seg->mu);
  if (seg->deleted || seg->uploaded) return absl::OkStatus();
  RETURN_IF_ERROR(fs::WriteFileAtomically(fs_, seg->path + std::string(kUploadedExt), "1"));
  seg->uploaded = true;
  return absl::OkStatus();
}

std::optional<uint64_t> SegmentStore::DurableEnd(std::string_view log, uint64_t segment) {
  auto seg = Find(log, segment, /*create=*/false);
  if (!seg.ok()) return std::nullopt;
  absl::MutexLock l(&(*seg)->mu);
  return (*seg)->end;
}

}  // namespace kf::logstore
