#include "storage/fs/fault_injection_file_system.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace kf::fs {

// A writable handle that routes every call through the owning FaultInjectionFileSystem so the
// crash bookkeeping and the fault knobs see it.
class FaultInjectionFileSystem::File final : public WritableFile {
 public:
  File(FaultInjectionFileSystem* fs, std::string path, uint64_t generation,
       std::unique_ptr<WritableFile> base)
      : fs_(fs), path_(std::move(path)), generation_(generation), base_(std::move(base)) {}

  absl::Status Append(std::string_view data) override {
    absl::ReaderMutexLock l(&fs_->mu_);
    return fs_->AppendLocked(path_, generation_, base_.get(), data);
  }
  absl::Status Sync() override {
    absl::ReaderMutexLock l(&fs_->mu_);
    return fs_->SyncLocked(path_, generation_, base_.get());
  }
  absl::Status Truncate(uint64_t size) override {
    absl::ReaderMutexLock l(&fs_->mu_);
    return fs_->TruncateLocked(path_, generation_, base_.get(), size);
  }
  absl::Status Preallocate(uint64_t size) override {
    absl::ReaderMutexLock l(&fs_->mu_);
    return fs_->PreallocateLocked(path_, generation_, base_.get(), size);
  }
  absl::Status ZeroFill(uint64_t offset, uint64_t len) override {
    absl::ReaderMutexLock l(&fs_->mu_);
    return fs_->ZeroFillLocked(path_, generation_, base_.get(), offset, len);
  }
  absl::Status Close() override { return base_->Close(); }
  uint64_t Size() const override { return base_->Size(); }

 private:
  FaultInjectionFileSystem* const fs_;
  const std::string path_;
  const uint64_t generation_;
  std::unique_ptr<WritableFile> base_;
};

FaultInjectionFileSystem::FaultInjectionFileSystem(FileSystem* base) : base_(base) {}

absl::Status FaultInjectionFileSystem::CheckNotDead() const {
  if (dead_) return absl::InternalError("simulated crash: file system is down");
  return absl::OkStatus();
}

absl::Status FaultInjectionFileSystem::CheckAlive(uint64_t generation) const {
  if (dead_ || generation != generation_) {
    return absl::InternalError("simulated crash: handle opened before the crash is dead");
  }
  return absl::OkStatus();
}

FaultInjectionFileSystem::Fault FaultInjectionFileSystem::NextWriteFault(size_t* partial_bytes) {
  absl::MutexLock l(&knob_mu_);
  ++writes_seen_;
  if (writes_seen_ == fail_write_at_) return Fault::kFail;
  if (writes_seen_ == partial_write_at_) {
    *partial_bytes = partial_bytes_;
    return Fault::kPartial;
  }
  return Fault::kNone;
}

bool FaultInjectionFileSystem::NextSyncFails() {
  absl::MutexLock l(&knob_mu_);
  ++syncs_seen_;
  return syncs_seen_ == fail_sync_at_;
}

absl::Status FaultInjectionFileSystem::AppendLocked(const std::string& path, uint64_t generation,
                                                    WritableFile* base, std::string_view data) {
  RETURN_IF_ERROR(CheckAlive(generation));
  size_t partial = 0;
  switch (NextWriteFault(&partial)) {
    case Fault::kFail:
      return absl::InternalError("injected write failure: " + path);
    case Fault::kPartial: {
      absl::Status s = base->Append(data.substr(0, std::min(partial, data.size())));
      NoteWritten(path, base->Size());
      RETURN_IF_ERROR(s);
      return absl::InternalError("injected partial write: " + path);
    }
    case Fault::kNone:
      break;
  }
  absl::Status s = base->Append(data);
  NoteWritten(path, base->Size());
  RETURN_IF_ERROR(s);
  absl::MutexLock l(&knob_mu_);
  ++writes_done_;
  return absl::OkStatus();
}

void FaultInjectionFileSystem::NoteWritten(const std::string& path, uint64_t end) {
  absl::MutexLock k(&knob_mu_);
  auto it = files_.find(path);
  if (it != files_.end()) it->second.written_len = std::max(it->second.written_len, end);
}

absl::Status FaultInjectionFileSystem::SyncLocked(const std::string& path, uint64_t generation,
                                                  WritableFile* base) {
  RETURN_IF_ERROR(CheckAlive(generation));
  if (NextSyncFails()) return absl::InternalError("injected fdatasync failure: " + path);
  // fdatasync covers the inode, so bytes another handle appended before the call count too.
  // (The file's size does not tell: a preallocated file is larger than its data.)
  uint64_t covered = base->Size();
  uint64_t prealloc = 0;
  {
    absl::MutexLock k(&knob_mu_);
    auto it = files_.find(path);
    if (it != files_.end()) {
      covered = std::max(covered, it->second.written_len);
      prealloc = it->second.preallocated;
    }
  }
  RETURN_IF_ERROR(base->Sync());
  // files_ is changed only under the exclusive lock; entries are created there too, so a
  // shared holder may update an existing entry's fields only through this dedicated lock.
  {
    absl::MutexLock k(&knob_mu_);
    ++syncs_done_;
    auto it = files_.find(path);
    if (it != files_.end()) {
      it->second.synced_len = std::max(it->second.synced_len, covered);
      it->second.durable_prealloc = std::max(it->second.durable_prealloc, prealloc);
    }
  }
  return absl::OkStatus();
}

absl::Status FaultInjectionFileSystem::TruncateLocked(const std::string& path, uint64_t generation,
                                                      WritableFile* base, uint64_t size) {
  RETURN_IF_ERROR(CheckAlive(generation));
  RETURN_IF_ERROR(base->Truncate(size));
  absl::MutexLock k(&knob_mu_);
  auto it = files_.find(path);
  if (it != files_.end()) {
    FileState& f = it->second;
    // Counted as durable at once: a crash then keeps less than a real disk might, never more.
    for (uint64_t* len : {&f.synced_len, &f.written_len, &f.preallocated, &f.durable_prealloc}) {
      *len = std::min(*len, size);
    }
  }
  return absl::OkStatus();
}

absl::Status FaultInjectionFileSystem::PreallocateLocked(const std::string& path,
                                                         uint64_t generation, WritableFile* base,
                                                         uint64_t size) {
  RETURN_IF_ERROR(CheckAlive(generation));
  RETURN_IF_ERROR(base->Preallocate(size));
  absl::MutexLock k(&knob_mu_);
  auto it = files_.find(path);
  if (it != files_.end()) it->second.preallocated = std::max(it->second.preallocated, size);
  return absl::OkStatus();
}

absl::Status FaultInjectionFileSystem::ZeroFillLocked(const std::string& path, uint64_t generation,
                                                      WritableFile* base, uint64_t offset,
                                                      uint64_t len) {
  RETURN_IF_ERROR(CheckAlive(generation));
  RETURN_IF_ERROR(base->ZeroFill(offset, len));
  // Durable zeros read like a synced reservation. The real call also makes earlier appends
  // durable; not counting them keeps less after a crash than a real disk might, never more.
  absl::MutexLock k(&knob_mu_);
  auto it = files_.find(path);
  if (it != files_.end()) {
    FileState& f = it->second;
    f.preallocated = std::max(f.preallocated, offset + len);
    f.durable_prealloc = std::max(f.durable_prealloc, offset + len);
  }
  return absl::OkStatus();
}

absl::Status FaultInjectionFileSystem::SimulateCrash() {
  absl::MutexLock l(&mu_);
  absl::MutexLock k(&knob_mu_);
  ++generation_;
  dead_ = true;
  // Undo renames no SyncDir made durable, newest first.
  for (auto it = renames_.rbegin(); it != renames_.rend(); ++it) {
    RETURN_IF_ERROR(base_->RenameFile(it->to, it->from));
    files_.erase(it->to);
    if (it->had_from_state) files_[it->from] = it->from_state;
    if (!it->backup.empty()) {
      RETURN_IF_ERROR(base_->RenameFile(it->backup, it->to));
      if (it->had_to_state) files_[it->to] = it->to_state;
    }
  }
  renames_.clear();
  for (const auto& [path, state] : files_) {
    if (!state.creation_durable) {
      absl::Status s = base_->RemoveFile(path);
      if (!s.ok() && !absl::IsNotFound(s)) return s;
      continue;
    }
    auto size = base_->GetFileSize(path);
    if (!size.ok()) {
      if (absl::IsNotFound(size.status())) continue;
      return size.status();
    }
    if (*size > state.synced_len) {
      ASSIGN_OR_RETURN(auto f, base_->OpenWritable(path, OpenMode::kAppendExisting));
      RETURN_IF_ERROR(f->Truncate(state.synced_len));
      // A synced reservation survives; what was written into it and not synced reads as zeros.
      if (state.durable_prealloc > state.synced_len) {
        RETURN_IF_ERROR(f->Preallocate(state.durable_prealloc));
      }
      RETURN_IF_ERROR(f->Sync());
      RETURN_IF_ERROR(f->Close());
    }
  }
  // What survived is durable by definition.
  files_.clear();
  return absl::OkStatus();
}

void FaultInjectionFileSystem::Restart() {
  absl::MutexLock l(&mu_);
  dead_ = false;
}

void FaultInjectionFileSystem::FailNthWrite(uint64_t n) {
  absl::MutexLock l(&knob_mu_);
  fail_write_at_ = writes_seen_ + n;
}
void FaultInjectionFileSystem::FailNthSync(uint64_t n) {
  absl::MutexLock l(&knob_mu_);
  fail_sync_at_ = syncs_seen_ + n;
}
void FaultInjectionFileSystem::PartialNthWrite(uint64_t n, size_t bytes) {
  absl::MutexLock l(&knob_mu_);
  partial_write_at_ = writes_seen_ + n;
  partial_bytes_ = bytes;
}
uint64_t FaultInjectionFileSystem::write_count() const {
  absl::MutexLock l(&knob_mu_);
  return writes_done_;
}
uint64_t FaultInjectionFileSystem::sync_count() const {
  absl::MutexLock l(&knob_mu_);
  return syncs_done_;
}
uint64_t FaultInjectionFileSystem::dir_sync_count() const {
  absl::MutexLock l(&knob_mu_);
  return dir_syncs_done_;
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::OpenWritable(
    const std::string& path, OpenMode mode) {
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CheckNotDead());
  ASSIGN_OR_RETURN(bool existed, base_->FileExists(path));
  ASSIGN_OR_RETURN(auto file, base_->OpenWritable(path, mode));
  {
    absl::MutexLock k(&knob_mu_);
    if (!files_.contains(path)) {
      FileState state;
      if (existed) {
        // Not created through us: whatever it holds now is taken as durable.
        state.creation_durable = true;
        state.synced_len = file->Size();
        state.written_len = file->Size();
      }
      files_[path] = state;
    }
  }
  return std::unique_ptr<WritableFile>(
      std::make_unique<File>(this, path, generation_, std::move(file)));
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> FaultInjectionFileSystem::OpenRandomAccess(
    const std::string& path) {
  return base_->OpenRandomAccess(path);
}

absl::StatusOr<uint64_t> FaultInjectionFileSystem::GetFileSize(const std::string& path) {
  return base_->GetFileSize(path);
}

absl::Status FaultInjectionFileSystem::RenameFile(const std::string& from, const std::string& to) {
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CheckNotDead());
  absl::MutexLock k(&knob_mu_);
  PendingRename r;
  r.from = from;
  r.to = to;
  ASSIGN_OR_RETURN(bool to_exists, base_->FileExists(to));
  if (to_exists) {
    // Park the replaced file so a crash can put it back.
    r.backup = absl::StrCat(to, ".fi-bak-", ++backup_seq_);
    RETURN_IF_ERROR(base_->RenameFile(to, r.backup));
  }
  absl::Status s = base_->RenameFile(from, to);
  if (!s.ok()) {
    if (!r.backup.empty()) (void)base_->RenameFile(r.backup, to);
    return s;
  }
  if (auto it = files_.find(from); it != files_.end()) {
    r.had_from_state = true;
    r.from_state = it->second;
    files_.erase(it);
  }
  if (auto it = files_.find(to); it != files_.end()) {
    r.had_to_state = true;
    r.to_state = it->second;
    files_.erase(it);
  }
  FileState moved = r.had_from_state ? r.from_state : FileState{};
  if (!r.had_from_state) {
    // An untracked source was durable; its new name is not until the directory is synced.
    if (auto size = base_->GetFileSize(to); size.ok()) moved.synced_len = moved.written_len = *size;
  }
  moved.creation_durable = false;
  files_[to] = moved;
  renames_.push_back(std::move(r));
  return absl::OkStatus();
}

absl::Status FaultInjectionFileSystem::RenameFileNoReplace(const std::string& from,
                                                           const std::string& to) {
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CheckNotDead());
  absl::MutexLock k(&knob_mu_);
  // Nothing is replaced, so a crash undoes it by moving the file back (no backup needed).
  RETURN_IF_ERROR(base_->RenameFileNoReplace(from, to));
  PendingRename r;
  r.from = from;
  r.to = to;
  FileState moved;
  if (auto it = files_.find(from); it != files_.end()) {
    r.had_from_state = true;
    r.from_state = it->second;
    moved = it->second;
    files_.erase(it);
  } else if (auto size = base_->GetFileSize(to); size.ok()) {
    moved.synced_len = *size;
  }
  moved.creation_durable = false;
  files_[to] = moved;
  renames_.push_back(std::move(r));
  return absl::OkStatus();
}

absl::Status FaultInjectionFileSystem::RemoveFile(const std::string& path) {
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CheckNotDead());
  RETURN_IF_ERROR(base_->RemoveFile(path));
  absl::MutexLock k(&knob_mu_);
  files_.erase(path);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> FaultInjectionFileSystem::GetChildren(
    const std::string& dir) {
  ASSIGN_OR_RETURN(auto names, base_->GetChildren(dir));
  std::vector<std::string> out;
  out.reserve(names.size());
  for (auto& n : names) {
    if (n.find(".fi-bak-") == std::string::npos) out.push_back(std::move(n));
  }
  return out;
}

absl::Status FaultInjectionFileSystem::CreateDirs(const std::string& dir) {
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CheckNotDead());
  return base_->CreateDirs(dir);
}

absl::Status FaultInjectionFileSystem::SyncDir(const std::string& dir) {
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CheckNotDead());
  RETURN_IF_ERROR(base_->SyncDir(dir));
  absl::MutexLock k(&knob_mu_);
  ++dir_syncs_done_;
  for (auto& [path, state] : files_) {
    if (DirName(path) == dir) state.creation_durable = true;
  }
  std::vector<PendingRename> keep;
  for (auto& r : renames_) {
    if (DirName(r.to) != dir) {
      keep.push_back(std::move(r));
      continue;
    }
    if (!r.backup.empty()) (void)base_->RemoveFile(r.backup);
  }
  renames_ = std::move(keep);
  return absl::OkStatus();
}

absl::StatusOr<bool> FaultInjectionFileSystem::FileExists(const std::string& path) {
  return base_->FileExists(path);
}

}  // namespace kf::fs
