#include "cli/vector_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "cli/csv_reader.h"
#include "cli/npy_reader.h"
#include "common/errors.h"
#include "common/file_util.h"

namespace kf::cli {

absl::StatusOr<Vectors> ReadVectorFile(const std::string& path) {
  const std::string lower = absl::AsciiStrToLower(path);
  const bool npy = absl::EndsWith(lower, ".npy");
  if (!npy && !absl::EndsWith(lower, ".csv")) {
    return absl::InvalidArgumentError(path + ": unknown vector file type (want .npy or .csv)");
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open", path);
  std::string bytes;
  char buf[1 << 16];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoStatus(err, "read", path);
    }
    bytes.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  absl::StatusOr<Vectors> v = npy ? ParseNpy(bytes) : ParseCsv(bytes);
  if (!v.ok()) return WithContext(v.status(), path);
  return v;
}

}  // namespace kf::cli
