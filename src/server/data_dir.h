// DataDir: the on-disk layout a server owns (docs/semantics.md §4) and the checks before it
// touches it.
//
//   <data-dir>/KINGFISHER        marker: this directory is ours (format, cluster, pchannels)
//   <data-dir>/wal/              the WAL (local backend root; may be shared between nodes)
//   <data-dir>/nodes/<id>/LOCK   flock'ed while a process serves this node
//   <data-dir>/meta/             standalone: the embedded metadata store (terms, TSO mark)
//
// Refuses (FAILED_PRECONDITION, message naming the problem): a directory that exists, is not
// empty and has no marker; a marker for another cluster name or pchannel count; a directory that
// cannot be created or written; a node directory locked by another live process.
// Thread-safety: not thread-safe; used once at startup. Ownership: DataDir holds the lock file
// descriptor for its lifetime.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace kf::server {

class DataDir {
 public:
  struct Identity {
    std::string cluster;
    int pchannels = 0;
  };

  // Creates the directory (and the marker) on first use, validates it otherwise, and locks the
  // node directory.
  static absl::StatusOr<std::unique_ptr<DataDir>> Open(const std::string& root, int64_t node_id,
                                                       const Identity& identity);
  ~DataDir();
  DataDir(const DataDir&) = delete;
  DataDir& operator=(const DataDir&) = delete;

  const std::string& root() const { return root_; }
  std::string wal_dir() const { return root_ + "/wal"; }
  const std::string& node_dir() const { return node_dir_; }
  std::string meta_dir() const { return root_ + "/meta"; }

 private:
  DataDir(std::string root, std::string node_dir, int lock_fd);

  const std::string root_;
  const std::string node_dir_;
  const int lock_fd_;
};

}  // namespace kf::server
