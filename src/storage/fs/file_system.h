// FileSystem: the file layer every local on-disk format is written against (RocksDB's
// FileSystem, reduced to what an append-only log needs). PosixFileSystem is the real one;
// FaultInjectionFileSystem wraps another to simulate crashes and I/O errors in tests.
//
// Thread-safety: FileSystem implementations are thread-safe. A WritableFile is used by one
// thread at a time, except that Sync and Size may run on a second thread while Append runs
// (a Sync covers what was appended before it started); a RandomAccessFile may be read
// concurrently.
// Ownership: files are returned as unique_ptr and own their descriptor; closing happens in
// Close() or the destructor (whose error is dropped; call Close() to see it).
// Errors: absl::Status per call; NOT_FOUND for a missing path, ALREADY_EXISTS for an exclusive
// create of an existing file, RESOURCE_EXHAUSTED for a full disk, INTERNAL for other I/O errors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/shared_bytes.h"

namespace kf::fs {

// An append-only file. Append buffers nothing: it is one write(2) (looping on short writes).
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual absl::Status Append(std::string_view data) = 0;
  // fdatasync: every byte appended before the call is durable when it returns OK.
  virtual absl::Status Sync() = 0;
  // Cuts the file to `size` bytes; later appends continue from there.
  virtual absl::Status Truncate(uint64_t size) = 0;
  // Reserves the file's blocks up to `size` bytes (fallocate): appends below it then do not
  // change the file's size, so an fdatasync commits no new size (on ext4 the first write into
  // a reserved block still marks it written, a smaller journal update; a small fdatasync cost
  // about a third less latency and CPU on the dev VM). The file's size on disk becomes at least
  // `size` and reads past the appended bytes return zeros; Size() still counts the appended
  // bytes only. The reservation is durable after the next Sync. UNIMPLEMENTED where the file
  // system cannot preallocate.
  virtual absl::Status Preallocate(uint64_t size) = 0;
  // Writes zeros to [offset, offset + len) and makes them durable, metadata included. Appends
  // into the range later overwrite blocks that are allocated and already written, so their
  // fdatasync flushes data only: no extent conversion, no new size, no journal commit, so no
  // jbd2 or kworker hop that a busy CPU delays (docs/local-wal-format.md). `offset` is a multiple
  // of 4096 at or past the end of the appended bytes; the caller keeps its appends out of the
  // range until the call returns (they may run meanwhile elsewhere in the file). Size() is
  // unchanged. UNIMPLEMENTED where not supported.
  virtual absl::Status ZeroFill(uint64_t offset, uint64_t len) = 0;
  virtual absl::Status Close() = 0;
  // Bytes in the file as seen through this handle (initial size + appended - truncated; the
  // initial size of a preallocated file includes its reserved zeros).
  virtual uint64_t Size() const = 0;
};

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to `n` bytes at `offset` into `scratch`; returns the count, which is below `n`
  // only at end of file.
  virtual absl::StatusOr<size_t> ReadAt(uint64_t offset, size_t n, char* scratch) const = 0;
  // Current size of the file (it may grow while open when another handle appends).
  virtual absl::StatusOr<uint64_t> Size() const = 0;
  // The file's first `n` bytes (n <= its size), mapped read-only: no copy of the page cache
  // (the pages are read in at once). The mapping outlives this handle and the file's removal
  // while its owner is held. Only for files that never change once written: touching a page
  // that a truncation removed raises SIGBUS. UNIMPLEMENTED where the file system cannot map
  // (the caller reads instead).
  virtual absl::StatusOr<SharedBytes> Map(size_t n) const {
    (void)n;
    return absl::UnimplementedError("this file system does not map files");
  }
};

// How OpenWritable treats an existing / missing file.
enum class OpenMode {
  kCreateExclusive,  // create; ALREADY_EXISTS if the file exists
  kCreateOrAppend,   // create if missing, else append at its end
  kAppendExisting,   // NOT_FOUND if missing, else append at its end
};

// One directory listed again and again (the local WAL's fence check after every group commit).
// Used by one thread at a time.
class DirectoryLister {
 public:
  virtual ~DirectoryLister() = default;
  // The directory's entries now, as FileSystem::GetChildren.
  virtual absl::StatusOr<std::vector<std::string>> List() = 0;
  // True when the entries are known to be those the last successful List returned, told
  // without reading the directory (PosixFileSystem's on a local file system: an inotify watch,
  // directory_change_watch.h); false when they may differ or it cannot tell. A change made
  // after a false is told by a later call, so a caller may keep what it derived from a List
  // while this says true.
  virtual bool Unchanged() { return false; }
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual absl::StatusOr<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path,
                                                                     OpenMode mode) = 0;
  virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenRandomAccess(
      const std::string& path) = 0;
  virtual absl::StatusOr<uint64_t> GetFileSize(const std::string& path) = 0;
  // rename(2): atomic replace of `to`. Durable only after SyncDir of the directory.
  virtual absl::Status RenameFile(const std::string& from, const std::string& to) = 0;
  // Atomic rename that never replaces: ALREADY_EXISTS (and nothing changes) when `to` exists,
  // so of two racing callers exactly one wins. Durable only after SyncDir of the directory.
  virtual absl::Status RenameFileNoReplace(const std::string& from, const std::string& to) = 0;
  virtual absl::Status RemoveFile(const std::string& path) = 0;
  // Names (not paths) of the entries of `dir`, without "." and "..", in no particular order.
  virtual absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) = 0;
  // mkdir -p. Each created directory is made durable in its parent.
  virtual absl::Status CreateDirs(const std::string& dir) = 0;
  // fsync of a directory: makes creates, renames and removes inside it durable.
  virtual absl::Status SyncDir(const std::string& dir) = 0;
  virtual absl::StatusOr<bool> FileExists(const std::string& path) = 0;
  // A lister of `dir` (NOT_FOUND when missing). This one lists by path (GetChildren) each time;
  // PosixFileSystem's keeps the directory open and reads it again (no path walk), and tells an
  // unchanged directory where it can (DirectoryLister::Unchanged).
  virtual absl::StatusOr<std::unique_ptr<DirectoryLister>> OpenDirectoryLister(
      const std::string& dir);
  // `bytes` copied into a new unnamed file in `dir` and mapped read-only, as
  // RandomAccessFile::Map maps a file: pages the kernel may write out, drop and read again under
  // memory pressure instead of the heap. The file has no name (O_TMPFILE; where that is not
  // supported, a named file removed at once): it goes with the mapping, and a crash leaves
  // nothing in `dir` (but for that fallback's instant). UNIMPLEMENTED where not supported; the
  // file system's error (RESOURCE_EXHAUSTED for a full disk) otherwise.
  virtual absl::StatusOr<SharedBytes> MapCopy(const std::string& dir, std::string_view bytes) {
    (void)dir;
    (void)bytes;
    return absl::UnimplementedError("this file system does not map files");
  }
};

// The process-wide POSIX file system (never null, never deleted).
FileSystem* DefaultFileSystem();

// Writes `data` so that after a crash `path` holds the old or the new contents: temp file,
// Sync, rename, SyncDir.
absl::Status WriteFileAtomically(FileSystem* fs, const std::string& path, std::string_view data);

// Reads a whole file. NOT_FOUND if missing.
absl::StatusOr<std::string> ReadFileToString(FileSystem* fs, const std::string& path);

// "a/b" + "c" -> "a/b/c"; the parent directory of a path ("." when there is none).
std::string JoinPath(std::string_view dir, std::string_view name);
std::string DirName(std::string_view path);

}  // namespace kf::fs
