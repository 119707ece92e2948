// LocalObjectStore: the ObjectStore in a local (or shared) directory, over the fs layer — the
// default object storage of standalone mode, and the reference the S3 store is tested against.
//
// Key "a/b/c" is the file <root>/a/b/c~ (the '~', outside the key charset, keeps object files
// and directories apart, so "a" and "a/b" can both exist). The file is a 24-byte header (magic,
// version, payload length, CRC32C of the payload; docs/object-store.md) and the payload. Put
// writes a temp file next to it, fdatasyncs it, renames it into place (RenameFileNoReplace
// for a conditional create, so exactly one of N racing creators wins, also across processes
// sharing the directory) and fsyncs the directory: an OK Put survives a crash. Reads check
// the length always and the CRC on whole-object reads (DATA_LOSS). Deletes leave empty
// directories behind (removing them would race with a concurrent Put into them).
//
// Deadlines are checked before a call and before a Put publishes its object; a started
// fsync is not interrupted.
//
// Thread-safety: thread-safe. Ownership: borrows `fs`, which must outlive the store.
// Errors: as ObjectStore; I/O errors of the fs layer come back as they are (INTERNAL,
// RESOURCE_EXHAUSTED, ...).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "storage/fs/file_system.h"
#include "storage/object/object_store.h"

namespace kf::object {

class LocalObjectStore final : public ObjectStore {
 public:
  // Creates `root` if missing.
  static absl::StatusOr<std::unique_ptr<LocalObjectStore>> Open(fs::FileSystem* fs,
                                                                const std::string& root);

  absl::StatusOr<std::string> Put(std::string_view key, std::string_view data,
                                  const PutOptions& options, absl::Time deadline) override;
  absl::StatusOr<std::string> Get(std::string_view key, const ByteRange& range,
                                  absl::Time deadline) override;
  // Maps the object's file (no copy), its checksum verified — on a local file system only:
  // there a mapping outlives the file's removal by anyone, while on a network one (NFS, SMB,
  // FUSE, CephFS, …: a root that nodes share) another node's removal may invalidate its pages
  // (SIGBUS when an evicted one is read again). Elsewhere it reads as Get does.
  absl::StatusOr<SharedBytes> GetShared(std::string_view key, absl::Time deadline,
                                        Checksum checksum = Checksum::kStore) override;
  bool MapsObjects() const override { return maps_; }
  absl::StatusOr<ObjectInfo> Head(std::string_view key, absl::Time deadline) override;
  absl::StatusOr<ListResult> List(std::string_view prefix, std::string_view start_after,
                                  size_t limit, absl::Time deadline) override;
  absl::Status Delete(std::string_view key, absl::Time deadline) override;

  // The file that holds `key` (tests corrupt it).
  std::string PathOf(std::string_view key) const;

 private:
  LocalObjectStore(fs::FileSystem* fs, std::string root, uint64_t nonce, bool maps)
      : fs_(fs), root_(std::move(root)), nonce_(nonce), maps_(maps) {}

  struct Walk;
  absl::Status ListDir(const std::string& dir_key, Walk* walk);

  fs::FileSystem* const fs_;
  const std::string root_;
  // Temp file names: `<name>~tmp.<nonce>.<seq>`, unique across processes sharing the root.
  const uint64_t nonce_;
  const bool maps_;  // root is on a local file system
  std::atomic<uint64_t> temp_seq_{0};
};

}  // namespace kf::object
