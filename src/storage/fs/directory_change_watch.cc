#include "storage/fs/directory_change_watch.h"

#include <linux/magic.h>
#include <pthread.h>
#include <sys/inotify.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace kf::fs {
namespace {

// Every change to the directory's entries, and its own removal or move.
constexpr uint32_t kEvents = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
                             IN_MOVE_SELF | IN_ONLYDIR;

bool OnLocalFileSystem(int fd) {
  struct statfs st;
  if (::fstatfs(fd, &st) != 0) return false;
  switch (static_cast<unsigned long>(st.f_type)) {
    case EXT4_SUPER_MAGIC:  // also ext2 and ext3
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
      return true;
    default:
      return false;
  }
}

}  // namespace

// The process's one inotify instance (one per process keeps clear of the per-user limit of
// instances, 128 by default), shared by every watch. Watches of one directory share the
// kernel's watch descriptor, so each keeps its own flag. A child of fork() shares the
// parent's open instance, whose events either process could read and so take from the other:
// the child stops using it (inherited_) and makes its own.
class Inotify {
 public:
  static Inotify* Get() {
    static const int registered = ::pthread_atfork(nullptr, nullptr, &ForgetInChild);
    (void)registered;
    Inotify* current = instance_.load(std::memory_order_acquire);
    if (current != nullptr) return current;
    auto* fresh = new Inotify();  // never deleted: watches may outlive main
    if (instance_.compare_exchange_strong(current, fresh, std::memory_order_acq_rel)) return fresh;
    delete fresh;
    return current;
  }
  ~Inotify() {
    if (fd_ >= 0) ::close(fd_);
  }

  std::unique_ptr<DirectoryChangeWatch> Add(int dir_fd) {
    if (fd_ < 0) return nullptr;
    // By the open descriptor, not a path: the directory held, even if its path now names another.
    const std::string path = "/proc/self/fd/" + std::to_string(dir_fd);
    absl::MutexLock l(&mu_);
    const int wd = ::inotify_add_watch(fd_, path.c_str(), kEvents);
    if (wd < 0) return nullptr;
    std::unique_ptr<DirectoryChangeWatch> watch(new DirectoryChangeWatch(this, wd));
    watches_[wd].push_back(watch.get());
    return watch;
  }

  void Remove(DirectoryChangeWatch* watch) {
    if (inherited_.load(std::memory_order_acquire)) return;  // the parent's (its mutex too)
    absl::MutexLock l(&mu_);
    auto it = watches_.find(watch->wd_);
    if (it == watches_.end()) return;
    std::vector<DirectoryChangeWatch*>& same = it->second;
    same.erase(std::find(same.begin(), same.end(), watch));
    if (!same.empty()) return;
    watches_.erase(it);
    // Fails harmlessly when the kernel already dropped it (the directory was removed).
    (void)::inotify_rm_watch(fd_, watch->wd_);
  }

  bool Changed(DirectoryChangeWatch* watch) {
    if (inherited_.load(std::memory_order_acquire)) return true;  // cannot tell: list
    absl::MutexLock l(&mu_);
    DrainLocked();
    return std::exchange(watch->changed_, false);
  }

 private:
  Inotify() : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {}

  // In the child, after fork(): only a store and an exchange (the parent's other threads, and
  // whatever they held, are gone).
  static void ForgetInChild() {
    Inotify* parents = instance_.exchange(nullptr, std::memory_order_acq_rel);
    if (parents != nullptr) parents->inherited_.store(true, std::memory_order_release);
  }

  // Reads every queued event and flags the watches they are for.
  void DrainLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    alignas(inotify_event) char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fd_, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (n == 0 || errno != EAGAIN) FlagAllLocked();  // unreadable: assume changes
        return;
      }
      for (ssize_t at = 0; at < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
        if ((e->mask & IN_Q_OVERFLOW) != 0) {
          FlagAllLocked();
        } else if (auto it = watches_.find(e->wd); it != watches_.end()) {
          for (DirectoryChangeWatch* w : it->second) w->changed_ = true;
        }
        at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      }
    }
  }

  void FlagAllLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto& [wd, same] : watches_) {
      for (DirectoryChangeWatch* w : same) w->changed_ = true;
    }
  }

  static inline std::atomic<Inotify*> instance_{nullptr};
  const int fd_;                        // -1 without inotify
  std::atomic<bool> inherited_{false};  // this process is a fork of the one that made it
  absl::Mutex mu_;
  absl::flat_hash_map<int, std::vector<DirectoryChangeWatch*>> watches_ ABSL_GUARDED_BY(mu_);
};

std::unique_ptr<DirectoryChangeWatch> DirectoryChangeWatch::Open(int dir_fd) {
  if (!OnLocalFileSystem(dir_fd)) return nullptr;
  return Inotify::Get()->Add(dir_fd);
}

DirectoryChangeWatch::~DirectoryChangeWatch() { inotify_->Remove(this); }

bool DirectoryChangeWatch::Changed() { return inotify_->Changed(this); }

}  // namespace kf::fs
