// FaultInjectionFileSystem: wraps another FileSystem and simulates what a power loss keeps.
//
// It tracks, per file written through it, how many bytes a completed Sync covered and whether
// the file's creation was made durable by a SyncDir of its directory. SimulateCrash() then
// does to the underlying files what a crash would: un-synced renames are undone, files whose
// creation was never made durable are removed, and every other file is cut to its synced
// length (a synced preallocation then reads as zeros past it, as on a real disk). Files that
// existed before the wrapper saw them count as fully durable.
// After a crash every handle opened before it fails all calls (the "process" died); handles
// opened afterwards work normally, so a test can reopen through the same object.
// Knobs fail the Nth write or sync, or make the Nth write partial; counters let tests prove
// group commit (few syncs for many appends).
//
// Thread-safety: thread-safe. Writes and syncs hold a shared lock, SimulateCrash an exclusive
// one, so a crash never interleaves with an in-flight write.
// Ownership: borrows `base`, which must outlive this object and every file it returned.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "storage/fs/file_system.h"

namespace kf::fs {

class FaultInjectionFileSystem final : public FileSystem {
 public:
  explicit FaultInjectionFileSystem(FileSystem* base);

  // Drops everything a power loss would drop (see the header comment) and kills every
  // handle opened so far. Until Restart() every mutating call fails, so threads of the
  // "dead" process cannot change the post-crash state.
  absl::Status SimulateCrash();
  // Lets new handles and namespace changes through again (the machine rebooted).
  void Restart();

  // The `n`th Append (1-based, counted from this call) fails with INTERNAL and writes nothing.
  void FailNthWrite(uint64_t n);
  // The `n`th Sync (1-based, counted from this call) fails with INTERNAL; nothing becomes
  // durable (the bytes stay in the file, un-synced, as after a real fsync error).
  void FailNthSync(uint64_t n);
  // The `n`th Append writes only its first `bytes` bytes and then fails with INTERNAL.
  void PartialNthWrite(uint64_t n, size_t bytes);

  uint64_t write_count() const;     // completed WritableFile::Append calls
  uint64_t sync_count() const;      // completed WritableFile::Sync calls
  uint64_t dir_sync_count() const;  // completed SyncDir calls

  absl::StatusOr<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path,
                                                             OpenMode mode) override;
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenRandomAccess(
      const std::string& path) override;
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override;
  absl::Status RenameFile(const std::string& from, const std::string& to) override;
  absl::Status RenameFileNoReplace(const std::string& from, const std::string& to) override;
  absl::Status RemoveFile(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override;
  absl::Status CreateDirs(const std::string& dir) override;
  absl::Status SyncDir(const std::string& dir) override;
  absl::StatusOr<bool> FileExists(const std::string& path) override;

 private:
  class File;
  friend class File;

  struct FileState {
    uint64_t synced_len = 0;
    bool creation_durable = false;
    uint64_t written_len = 0;       // end of the bytes appended through any handle
    uint64_t preallocated = 0;      // reserved by Preallocate (the size reads return)
    uint64_t durable_prealloc = 0;  // the part of `preallocated` a Sync covered
  };
  struct PendingRename {
    std::string from;
    std::string to;
    std::string backup;  // where the replaced `to` was parked; empty if `to` did not exist
    bool had_from_state = false;
    FileState from_state;
    bool had_to_state = false;
    FileState to_state;
  };
  enum class Fault { kNone, kFail, kPartial };

  // Called by File with mu_ held shared.
  absl::Status AppendLocked(const std::string& path, uint64_t generation, WritableFile* base,
                            std::string_view data) ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status SyncLocked(const std::string& path, uint64_t generation, WritableFile* base)
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status TruncateLocked(const std::string& path, uint64_t generation, WritableFile* base,
                              uint64_t size) ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status PreallocateLocked(const std::string& path, uint64_t generation, WritableFile* base,
                                 uint64_t size) ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status ZeroFillLocked(const std::string& path, uint64_t generation, WritableFile* base,
                              uint64_t offset, uint64_t len) ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status CheckAlive(uint64_t generation) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status CheckNotDead() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  Fault NextWriteFault(size_t* partial_bytes);
  bool NextSyncFails();
  // Records that `path`'s appended bytes reach `end` (takes knob_mu_).
  void NoteWritten(const std::string& path, uint64_t end) ABSL_SHARED_LOCKS_REQUIRED(mu_);

  FileSystem* const base_;
  // Shared by writes/syncs, exclusive for crashes and namespace changes.
  mutable absl::Mutex mu_;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool dead_ ABSL_GUARDED_BY(mu_) = false;
  // Entries are added/removed under mu_ exclusive; fields are also updated by holders of mu_
  // shared, who then take knob_mu_ as well.
  std::map<std::string, FileState> files_ ABSL_GUARDED_BY(mu_);
  std::vector<PendingRename> renames_ ABSL_GUARDED_BY(mu_);
  uint64_t backup_seq_ ABSL_GUARDED_BY(mu_) = 0;

  // Fault knobs and counters; their own lock because writes hold mu_ only shared.
  mutable absl::Mutex knob_mu_;
  uint64_t writes_seen_ ABSL_GUARDED_BY(knob_mu_) = 0;
  uint64_t syncs_seen_ ABSL_GUARDED_BY(knob_mu_) = 0;
  uint64_t fail_write_at_ ABSL_GUARDED_BY(knob_mu_) = 0;  // 0 = off; absolute write number
  uint64_t partial_write_at_ ABSL_GUARDED_BY(knob_mu_) = 0;
  size_t partial_bytes_ ABSL_GUARDED_BY(knob_mu_) = 0;
  uint64_t fail_sync_at_ ABSL_GUARDED_BY(knob_mu_) = 0;
  uint64_t writes_done_ ABSL_GUARDED_BY(knob_mu_) = 0;
  uint64_t syncs_done_ ABSL_GUARDED_BY(knob_mu_) = 0;
  uint64_t dir_syncs_done_ ABSL_GUARDED_BY(knob_mu_) = 0;
};

}  // namespace kf::fs
