// A memory cgroup that a bench puts a server into, so that the kernel enforces a memory limit
// on the whole process — anonymous memory and the page cache it touches (its mapped segment
// objects, its WAL's writes) — as a container's limit would. cgroup v1 (memory controller at
// /sys/fs/cgroup/memory) or v2 (/sys/fs/cgroup with memory.max). Needs the right to create a
// cgroup (root on a test VM); Create says why not otherwise. The process is moved in after it
// started: what it charged before (its first pages) may stay charged where it was. On cgroup v2
// the parent must have the memory controller enabled for its children, and memory.peak needs
// Linux 5.19 (PeakBytes is 0 before).
//
// Thread-safety: not thread-safe. Errors: Create returns the reason as a status; the readers
// return 0 when a file cannot be read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace kf::bench {

class MemoryCgroup {
 public:
  // A new cgroup named `name` (a stale one of that name is reused) limited to `limit_bytes`,
  // with no swap to spill into beyond the limit.
  static absl::StatusOr<std::unique_ptr<MemoryCgroup>> Create(const std::string& name,
                                                              uint64_t limit_bytes);
  ~MemoryCgroup();  // removes the cgroup (once its processes have exited)
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;

  // Moves process `pid` (all its threads) into the cgroup.
  absl::Status Add(pid_t pid);
  // The most the cgroup was charged at once (v1 memory.max_usage_in_bytes, v2 memory.peak).
  uint64_t PeakBytes() const;
  // Processes the kernel's OOM killer killed in the cgroup.
  uint64_t OomKills() const;
  const std::string& path() const { return path_; }

 private:
  MemoryCgroup(std::string path, bool v2) : path_(std::move(path)), v2_(v2) {}
  std::string path_;
  bool v2_;
};

}  // namespace kf::bench
