#include "server/data_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "storage/fs/file_system.h"

namespace kf::server {
namespace {

constexpr char kMarker[] = "KINGFISHER";
// Format 2: pchannel terms and the timestamp mark live in the metadata store (format 1 kept them
// in nodes/<id>/{term,tso}); a format-1 WAL would be fenced above the terms format 2 assigns.
// Format 3: objects/ holds sealed segments of object format 2 (docs/sealed-segment-format.md;
// format 1's would fail to load).
constexpr char kMarkerFormat[] = "kingfisher-data-dir 3";

std::string MarkerContents(const DataDir::Identity& id) {
  return absl::StrCat(kMarkerFormat, "\ncluster=", id.cluster, "\npchannels=", id.pchannels, "\n");
}

absl::Status Refuse(const std::string& msg) { return absl::FailedPreconditionError(msg); }

absl::StatusOr<bool> IsEmptyDir(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return ErrnoStatus(errno, "opendir", dir);
  bool empty = true;
  while (struct dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  closedir(d);
  return empty;
}

// Root may bypass permission bits, so actually try to create a file.
absl::Status CheckWritable(const std::string& dir) {
  const std::string probe = dir + "/.kingfisher-write-probe";
  int fd = ::open(probe.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Refuse(absl::StrCat("data dir ", dir, " is not writable: ", std::strerror(errno)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return absl::OkStatus();
}

absl::Status MakeDirs(const std::string& dir, const std::string& what) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Refuse(absl::StrCat("cannot create ", what, " ", dir, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataDir>> DataDir::Open(const std::string& root, int64_t node_id,
                                                       const Identity& identity) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(root, ec);
  if (exists && !std::filesystem::is_directory(root, ec)) {
    return Refuse(absl::StrCat("data dir ", root, " exists and is not a directory"));
  }
  RETURN_IF_ERROR(MakeDirs(root, "data dir"));
  const std::string marker = root + "/" + kMarker;
  absl::StatusOr<std::string> contents = fs::ReadFileToString(fs::DefaultFileSystem(), marker);
  if (contents.ok()) {
    if (!absl::StartsWith(*contents, absl::StrCat(kMarkerFormat, "\n"))) {
      return Refuse(absl::StrCat(
          "data dir ", root, " has another format (", marker, " starts with '",
          contents->substr(0, contents->find('\n')), "', this server writes '", kMarkerFormat,
          "'): it was written by an incompatible Kingfisher version; move it away and start with "
          "an empty data dir"));
    }
    if (*contents != MarkerContents(identity)) {
      return Refuse(absl::StrCat("data dir ", root, " belongs to another configuration (", marker,
                                 " says '", absl::StripTrailingAsciiWhitespace(*contents),
                                 "'; this server has cluster=", identity.cluster,
                                 " pchannels=", identity.pchannels,
                                 "): the pchannel count is fixed when a data dir is initialised"));
    }
    RETURN_IF_ERROR(CheckWritable(root));
  } else if (absl::IsNotFound(contents.status())) {
    ASSIGN_OR_RETURN(bool empty, IsEmptyDir(root));
    if (!empty) {
      return Refuse(absl::StrCat("data dir ", root,
                                 " is not a Kingfisher data dir: it is not empty and has no ",
                                 kMarker, " marker file; refusing to touch it"));
    }
    RETURN_IF_ERROR(CheckWritable(root));
    if (absl::Status s =
            fs::WriteFileAtomically(fs::DefaultFileSystem(), marker, MarkerContents(identity));
        !s.ok()) {
      return Refuse(absl::StrCat("cannot initialise data dir ", root, ": ", s.message()));
    }
  } else {
    return Refuse(absl::StrCat("cannot read ", marker, ": ", contents.status().message()));
  }

  const std::string node_dir = absl::StrCat(root, "/nodes/", node_id);
  RETURN_IF_ERROR(MakeDirs(root + "/wal", "WAL dir"));
  RETURN_IF_ERROR(MakeDirs(node_dir, "node dir"));
  const std::string lock_path = node_dir + "/LOCK";
  int fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) return Refuse(absl::StrCat("cannot open ", lock_path, ": ", std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Refuse(absl::StrCat("data dir ", root, " is in use by another kingfisher process (",
                                 lock_path, " is locked)"));
    }
    return Refuse(absl::StrCat("cannot lock ", lock_path, ": ", std::strerror(err)));
  }
  return std::unique_ptr<DataDir>(new DataDir(root, node_dir, fd));
}

DataDir::DataDir(std::string root, std::string node_dir, int lock_fd)
    : root_(std::move(root)), node_dir_(std::move(node_dir)), lock_fd_(lock_fd) {}

DataDir::~DataDir() { ::close(lock_fd_); }

}  // namespace kf::server
