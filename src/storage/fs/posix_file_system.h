// PosixFileSystem: FileSystem over POSIX calls. Sync is fdatasync(2); EINTR and short
// reads/writes are retried. Stateless and thread-safe; DefaultFileSystem() returns a shared one.
#pragma once

#include "storage/fs/file_system.h"

namespace kf::fs {

class PosixFileSystem final : public FileSystem {
 public:
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
  absl::StatusOr<std::unique_ptr<DirectoryLister>> OpenDirectoryLister(
      const std::string& dir) override;
  absl::StatusOr<SharedBytes> MapCopy(const std::string& dir, std::string_view bytes) override;
};

}  // namespace kf::fs
