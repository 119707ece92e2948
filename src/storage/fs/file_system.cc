#include "storage/fs/file_system.h"

#include <utility>

#include "common/status_macros.h"

namespace kf::fs {
namespace {

class PathLister final : public DirectoryLister {
 public:
  PathLister(FileSystem* fs, std::string dir) : fs_(fs), dir_(std::move(dir)) {}
  absl::StatusOr<std::vector<std::string>> List() override { return fs_->GetChildren(dir_); }

 private:
  FileSystem* const fs_;
  const std::string dir_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DirectoryLister>> FileSystem::OpenDirectoryLister(
    const std::string& dir) {
  ASSIGN_OR_RETURN(bool exists, FileExists(dir));
  if (!exists) return absl::NotFoundError("no directory " + dir);
  return std::make_unique<PathLister>(this, dir);
}

absl::Status WriteFileAtomically(FileSystem* fs, const std::string& path, std::string_view data) {
  const std::string tmp = path + ".tmp";
  {
    // A leftover temp file from a crashed attempt is simply replaced.
    auto exists = fs->FileExists(tmp);
    if (exists.ok() && *exists) RETURN_IF_ERROR(fs->RemoveFile(tmp));
    ASSIGN_OR_RETURN(auto file, fs->OpenWritable(tmp, OpenMode::kCreateExclusive));
    RETURN_IF_ERROR(file->Append(data));
    RETURN_IF_ERROR(file->Sync());
    RETURN_IF_ERROR(file->Close());
  }
  RETURN_IF_ERROR(fs->RenameFile(tmp, path));
  return fs->SyncDir(DirName(path));
}

absl::StatusOr<std::string> ReadFileToString(FileSystem* fs, const std::string& path) {
  ASSIGN_OR_RETURN(auto file, fs->OpenRandomAccess(path));
  std::string out;
  char buf[16384];
  for (;;) {
    ASSIGN_OR_RETURN(size_t n, file->ReadAt(out.size(), sizeof buf, buf));
    if (n == 0) break;
    out.append(buf, n);
  }
  return out;
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (!out.empty() && out.back() != '/') out.push_back('/');
  out.append(name);
  return out;
}

std::string DirName(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

}  // namespace kf::fs
