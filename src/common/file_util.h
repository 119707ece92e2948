// Small POSIX helpers for metadata files that must be replaced atomically and durably.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kf {

// Writes `data` to `path` so that after a crash the file holds either the old or the new
// contents: write a temp file, fdatasync it, rename over `path`, fsync the directory.
absl::Status WriteFileAtomically(const std::string& path, const std::string& data);

// Reads a whole file. NOT_FOUND if it does not exist.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// fsyncs a directory so that a create/rename inside it is durable.
absl::Status SyncDir(const std::string& dir);

// absl::Status from errno with the failing operation and path in the message.
absl::Status ErrnoStatus(int err, const std::string& op, const std::string& path);

}  // namespace kf
