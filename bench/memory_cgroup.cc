#include "memory_cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace kf::bench {
namespace {

constexpr char kV1Root[] = "/sys/fs/cgroup/memory";
constexpr char kV2Root[] = "/sys/fs/cgroup";

absl::Status Write(const std::string& file, const std::string& value) {
  std::ofstream out(file);
  out << value;
  out.flush();
  if (!out) {
    return absl::UnavailableError(
        absl::StrCat("cannot write ", value, " to ", file, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// The value after `key` in a file of "key value" lines, or the file's whole value if `key` is
// empty; 0 if it cannot be read.
uint64_t Read(const std::string& file, const std::string& key = "") {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string first;
    uint64_t value = 0;
    if (key.empty()) {
      if (words >> value) return value;
    } else if (words >> first >> value && first == key) {
      return value;
    }
  }
  return 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MemoryCgroup>> MemoryCgroup::Create(const std::string& name,
                                                                   uint64_t limit_bytes) {
  struct stat st;
  const bool v1 = ::stat(absl::StrCat(kV1Root, "/memory.limit_in_bytes").c_str(), &st) == 0;
  const bool v2 = !v1 && ::stat(absl::StrCat(kV2Root, "/cgroup.controllers").c_str(), &st) == 0;
  if (!v1 && !v2) return absl::UnavailableError("no memory cgroup controller mounted");
  const std::string path = absl::StrCat(v1 ? kV1Root : kV2Root, "/", name);
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::UnavailableError(
        absl::StrCat("cannot create cgroup ", path, ": ", std::strerror(errno)));
  }
  std::unique_ptr<MemoryCgroup> cgroup(new MemoryCgroup(path, v2));
  const std::string limit = std::to_string(limit_bytes);
  if (v1) {
    // What a process moved in had charged moves with it (best effort: newer kernels dropped it).
    (void)Write(path + "/memory.move_charge_at_immigrate", "3");
    if (auto s = Write(path + "/memory.limit_in_bytes", limit); !s.ok()) return s;
    // memsw (memory + swap) exists only with swap accounting; without it there is no swap.
    if (::stat((path + "/memory.memsw.limit_in_bytes").c_str(), &st) == 0) {
      if (auto s = Write(path + "/memory.memsw.limit_in_bytes", limit); !s.ok()) return s;
    }
  } else {
    if (auto s = Write(path + "/memory.max", limit); !s.ok()) return s;
    if (::stat((path + "/memory.swap.max").c_str(), &st) == 0) {
      if (auto s = Write(path + "/memory.swap.max", "0"); !s.ok()) return s;
    }
  }
  return cgroup;
}

MemoryCgroup::~MemoryCgroup() { ::rmdir(path_.c_str()); }

absl::Status MemoryCgroup::Add(pid_t pid) {
  return Write(path_ + "/cgroup.procs", std::to_string(pid));
}

uint64_t MemoryCgroup::PeakBytes() const {
  return v2_ ? Read(path_ + "/memory.peak") : Read(path_ + "/memory.max_usage_in_bytes");
}

uint64_t MemoryCgroup::OomKills() const {
  return v2_ ? Read(path_ + "/memory.events", "oom_kill")
             : Read(path_ + "/memory.oom_control", "oom_kill");
}

}  // namespace kf::bench
