// DirectoryChangeWatch: whether a directory may have changed since the last look, told by one
// non-blocking read of a process-wide inotify instance instead of a listing (an lseek, two
// getdents64 and an fstat: ~10 µs of a VM's CPU after every group commit of the local WAL,
// docs/performance.md).
//
// Why it can stand in for a listing: on a local file system the kernel queues the event of a
// create, remove or rename inside that system call, before it returns, whatever process makes
// it. So a change whose call returned before Changed() began is reported by it, and one that
// did not is concurrent with the look, which a listing cannot order either. Another host's
// changes to a network file system make no event here: Open watches only file systems known to
// be local (ext2/3/4, XFS, Btrfs, tmpfs) and returns null elsewhere, as it does without inotify
// or past its limits; the caller then lists every time.
//
// Thread-safety: thread-safe (one mutex over the shared instance; each look is one read(2)).
// A child of fork() makes its own instance; the watches it inherited report a change at every
// look (the parent's instance is the parent's to read).
#pragma once

#include <memory>

namespace kf::fs {

class Inotify;

class DirectoryChangeWatch {
 public:
  // A watch on the directory open as `dir_fd` (the caller keeps it open), or null where a
  // watch cannot tell every change (see above).
  static std::unique_ptr<DirectoryChangeWatch> Open(int dir_fd);
  ~DirectoryChangeWatch();
  DirectoryChangeWatch(const DirectoryChangeWatch&) = delete;
  DirectoryChangeWatch& operator=(const DirectoryChangeWatch&) = delete;

  // False only when, since the previous call (since Open for the first), no entry of the
  // directory was created, removed or renamed and the directory was not moved. Its removal is
  // told only once nothing holds it open any more (the kernel's IN_DELETE_SELF): a caller that
  // holds it asks fstat. True also when events were lost (the queue overflowed) or could not be
  // read.
  bool Changed();

 private:
  DirectoryChangeWatch(Inotify* inotify, int wd) : inotify_(inotify), wd_(wd) {}
  Inotify* const inotify_;  // the process's instance when this watch was made
  const int wd_;            // the kernel's watch descriptor; watches of one directory share it
  bool changed_ = false;    // guarded by inotify_'s mutex
  friend class Inotify;
};

}  // namespace kf::fs
