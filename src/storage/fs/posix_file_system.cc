#include "storage/fs/posix_file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "storage/fs/directory_change_watch.h"

namespace kf::fs {
namespace {

// The first `n` bytes of `fd`, mapped read-only and populated at once: the caller reads them all
// (a checksum), and one walk of the page cache costs less than a fault per 64 KiB.
absl::StatusOr<SharedBytes> MapFile(int fd, size_t n, const std::string& what) {
  if (n == 0) return SharedBytes{};  // mmap refuses an empty mapping
  void* p = ::mmap(nullptr, n, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) return ErrnoStatus(errno, "mmap", what);
  std::shared_ptr<const void> owner(p, [n](const void* q) { ::munmap(const_cast<void*>(q), n); });
  return SharedBytes{.bytes = std::string_view(static_cast<const char*>(p), n),
                     .owner = std::move(owner),
                     .mapped = true};
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Append(std::string_view data) override {
    const char* p = data.data();
    size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "write", path_);
      }
      p += n;
      left -= static_cast<size_t>(n);
      size_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    }
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if (::fdatasync(fd_) != 0) return ErrnoStatus(errno, "fdatasync", path_);
    return absl::OkStatus();
  }

  absl::Status Truncate(uint64_t size) override {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      return ErrnoStatus(errno, "ftruncate", path_);
    }
    // The descriptor is not O_APPEND: move the write position to the new end explicitly.
    if (::lseek(fd_, static_cast<off_t>(size), SEEK_SET) < 0) {
      return ErrnoStatus(errno, "lseek", path_);
    }
    size_.store(size, std::memory_order_relaxed);
    return absl::OkStatus();
  }

  absl::Status Preallocate(uint64_t size) override {
    // Mode 0 moves the size too; only then does an append not change the inode.
    if (::fallocate(fd_, 0, 0, static_cast<off_t>(size)) != 0) {
      if (errno == EOPNOTSUPP || errno == ENOSYS) {
        return absl::UnimplementedError("fallocate not supported: " + path_);
      }
      return ErrnoStatus(errno, "fallocate", path_);
    }
    return absl::OkStatus();
  }

  absl::Status ZeroFill(uint64_t offset, uint64_t len) override {
    static const std::string kZeros(256 << 10, '\0');
    for (uint64_t done = 0; done < len;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kZeros.size(), len - done));
      const ssize_t w = ::pwrite(fd_, kZeros.data(), n, static_cast<off_t>(offset + done));
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "pwrite", path_);
      }
      done += static_cast<uint64_t>(w);
    }
    // Written back before the fdatasync, so that an appender's fdatasync running meanwhile
    // flushes as few of these pages as possible; they stay cached, clean, so an append that
    // fills part of a page finds it there instead of reading it from disk.
    if (::sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(len),
                          SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                              SYNC_FILE_RANGE_WAIT_AFTER) != 0) {
      return ErrnoStatus(errno, "sync_file_range", path_);
    }
    if (::fdatasync(fd_) != 0) return ErrnoStatus(errno, "fdatasync", path_);
    return absl::OkStatus();
  }

  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return ErrnoStatus(errno, "close", path_);
    return absl::OkStatus();
  }

  uint64_t Size() const override { return size_.load(std::memory_order_relaxed); }

 private:
  const std::string path_;
  int fd_;
  // Atomic because Sync may run on another thread while Append runs (see file_system.h).
  std::atomic<uint64_t> size_;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  absl::StatusOr<size_t> ReadAt(uint64_t offset, size_t n, char* scratch) const override {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, scratch + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "pread", path_);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }

  absl::StatusOr<uint64_t> Size() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoStatus(errno, "fstat", path_);
    return static_cast<uint64_t>(st.st_size);
  }

  absl::StatusOr<SharedBytes> Map(size_t n) const override { return MapFile(fd_, n, path_); }

 private:
  const std::string path_;
  int fd_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<WritableFile>> PosixFileSystem::OpenWritable(const std::string& path,
                                                                            OpenMode mode) {
  int flags = O_WRONLY | O_CLOEXEC;
  switch (mode) {
    case OpenMode::kCreateExclusive:
      flags |= O_CREAT | O_EXCL;
      break;
    case OpenMode::kCreateOrAppend:
      flags |= O_CREAT;
      break;
    case OpenMode::kAppendExisting:
      break;
  }
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return absl::AlreadyExistsError("file exists: " + path);
    return ErrnoStatus(errno, "open", path);
  }
  off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus(err, "lseek", path);
  }
  return std::make_unique<PosixWritableFile>(path, fd, static_cast<uint64_t>(end));
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> PosixFileSystem::OpenRandomAccess(
    const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open", path);
  return std::make_unique<PosixRandomAccessFile>(path, fd);
}

absl::StatusOr<uint64_t> PosixFileSystem::GetFileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, "stat", path);
  return static_cast<uint64_t>(st.st_size);
}

absl::Status PosixFileSystem::RenameFile(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoStatus(errno, "rename", from);
  return absl::OkStatus();
}

absl::Status PosixFileSystem::RenameFileNoReplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) {
    return absl::OkStatus();
  }
  if (errno == EEXIST) return absl::AlreadyExistsError(absl::StrCat("rename: exists: ", to));
  if (errno != EINVAL && errno != ENOSYS) return ErrnoStatus(errno, "renameat2", to);
  // A filesystem without RENAME_NOREPLACE: link(2) fails with EEXIST just as atomically.
  if (::link(from.c_str(), to.c_str()) != 0) {
    if (errno == EEXIST) return absl::AlreadyExistsError(absl::StrCat("link: exists: ", to));
    return ErrnoStatus(errno, "link", to);
  }
  if (::unlink(from.c_str()) != 0) return ErrnoStatus(errno, "unlink", from);
  return absl::OkStatus();
}

absl::Status PosixFileSystem::RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0) return ErrnoStatus(errno, "unlink", path);
  return absl::OkStatus();
}

namespace {

// readdir returns null at the end and on an error, which only errno tells apart.
absl::StatusOr<std::vector<std::string>> ReadEntries(DIR* d, const std::string& dir) {
  std::vector<std::string> out;
  for (;;) {
    errno = 0;
    struct dirent* e = ::readdir(d);
    if (e == nullptr) break;
    std::string_view name(e->d_name);
    if (name == "." || name == "..") continue;
    out.emplace_back(name);
  }
  if (errno != 0) return ErrnoStatus(errno, "readdir", dir);
  return out;
}

// rewinddir makes the stream see the directory as it is now (POSIX), so each List is a fresh
// listing: an lseek, the getdents64 calls and an fstat, against opendir's path walk, its
// fstat and close. Unchanged is one read(2) of the process's inotify instance and an fstat.
class PosixDirectoryLister final : public DirectoryLister {
 public:
  PosixDirectoryLister(DIR* d, std::string path)
      : dir_(d), path_(std::move(path)), watch_(DirectoryChangeWatch::Open(::dirfd(d))) {}
  ~PosixDirectoryLister() override { ::closedir(dir_); }

  absl::StatusOr<std::vector<std::string>> List() override {
    listed_ = false;
    // What changed so far is in this listing; Unchanged tells what changes from here on.
    if (watch_ != nullptr) (void)watch_->Changed();
    ::rewinddir(dir_);
    absl::StatusOr<std::vector<std::string>> names = ReadEntries(dir_, path_);
    if (!names.ok()) return names;
    RETURN_IF_ERROR(CheckNotRemoved());
    listed_ = true;
    return names;
  }

  bool Unchanged() override {
    // Asked before the caller lists again: a change made meanwhile is told by the next call.
    return watch_ != nullptr && !watch_->Changed() && listed_ && CheckNotRemoved().ok();
  }

 private:
  // A directory removed while held lists as empty, and one made again at its path is not this
  // one: NOT_FOUND, for the caller to look by path. (Its removal makes no inotify event while
  // it is held open.)
  absl::Status CheckNotRemoved() {
    struct stat st;
    if (::fstat(::dirfd(dir_), &st) != 0) return ErrnoStatus(errno, "fstat", path_);
    if (st.st_nlink == 0) return absl::NotFoundError("directory removed: " + path_);
    return absl::OkStatus();
  }

  DIR* const dir_;
  const std::string path_;
  const std::unique_ptr<DirectoryChangeWatch> watch_;  // null: never Unchanged
  bool listed_ = false;                                // the last List succeeded
};

}  // namespace

absl::StatusOr<std::vector<std::string>> PosixFileSystem::GetChildren(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoStatus(errno, "opendir", dir);
  absl::StatusOr<std::vector<std::string>> out = ReadEntries(d, dir);
  ::closedir(d);
  return out;
}

absl::StatusOr<std::unique_ptr<DirectoryLister>> PosixFileSystem::OpenDirectoryLister(
    const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoStatus(errno, "opendir", dir);
  return std::make_unique<PosixDirectoryLister>(d, dir);
}

absl::Status PosixFileSystem::CreateDirs(const std::string& dir) {
  if (dir.empty() || dir == "/" || dir == ".") return absl::OkStatus();
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return absl::OkStatus();
    return absl::FailedPreconditionError("not a directory: " + dir);
  }
  std::string parent = DirName(dir);
  if (parent != dir) {
    absl::Status s = CreateDirs(parent);
    if (!s.ok()) return s;
  }
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoStatus(errno, "mkdir", dir);
  return SyncDir(parent);
}

absl::Status PosixFileSystem::SyncDir(const std::string& dir) { return kf::SyncDir(dir); }

absl::StatusOr<bool> PosixFileSystem::FileExists(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT) return false;
  return ErrnoStatus(errno, "stat", path);
}

absl::StatusOr<SharedBytes> PosixFileSystem::MapCopy(const std::string& dir,
                                                     std::string_view bytes) {
  if (bytes.empty()) return SharedBytes{};  // mmap refuses an empty mapping
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    // No O_TMPFILE here (e.g. overlayfs before Linux 6.6): a named file, unlinked at once (a
    // crash in between leaves it behind; the caller clears the directory when it starts).
    std::string path = JoinPath(dir, "spill-XXXXXX");
    fd = ::mkostemp(path.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(path.c_str());
  }
  if (fd < 0) return ErrnoStatus(errno, "open an unnamed file in", dir);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }  // the mapping keeps the file
  } closer{fd};
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "write an unnamed file in", dir);
    }
    done += static_cast<size_t>(w);
  }
  return MapFile(fd, bytes.size(), "an unnamed file in " + dir);
}

FileSystem* DefaultFileSystem() {
  static auto* fs = new PosixFileSystem();
  return fs;
}

}  // namespace kf::fs
