// POSIX primitives under the file layer (src/storage/fs); everything else reads and writes
// files through fs::FileSystem, so tests can inject faults.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kf {

// fsyncs a directory so that a create/rename inside it is durable.
absl::Status SyncDir(const std::string& dir);

// absl::Status from errno with the failing operation and path in the message.
absl::Status ErrnoStatus(int err, const std::string& op, const std::string& path);

}  // namespace kf
