// ObjectStore: the object storage the objectstore and quorum WAL backends keep their blocks,
// fence objects and manifests in (docs/semantics.md §4). Implementations: LocalObjectStore (a
// directory), S3ObjectStore (S3 over HTTP, tested against Ceph RGW) and FaultObjectStore (tests).
// The contract is in docs/object-store.md.
//
// Keys: 1..1024 bytes of [A-Za-z0-9/_.-]; segments ('/'-separated) of 1..200 bytes (a file
// name in the local store, with room for its temp suffix); no leading or trailing '/' and no
// "." or ".." segment. The charset needs no escaping in a URL path or a file name, and
// orders the same everywhere (bytewise). List prefixes and start_after follow the same charset
// (they may be empty and a prefix may end with '/').
//
// Thread-safety: implementations are thread-safe. Ownership: the caller owns the store.
// Errors (absl::Status), the same for every implementation:
//   NOT_FOUND          the key does not exist (Get, Head)
//   ALREADY_EXISTS     a conditional create (PutOptions::if_absent) found the key: the fencing
//                      primitive; of N concurrent creators exactly one gets OK
//   DEADLINE_EXCEEDED  the deadline passed; a Put may or may not have been applied
//   UNAVAILABLE        retryable transport/server failure after the store's own retries; a Put
//                      may or may not have been applied
//   INVALID_ARGUMENT   a bad key, prefix, range or limit
//   OUT_OF_RANGE       a byte range that does not overlap the object
//   DATA_LOSS          the bytes read do not match the stored size or checksum
//   INTERNAL           anything else (e.g. a response that does not parse)
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/shared_bytes.h"

namespace kf::object {

inline constexpr size_t kMaxKeyBytes = 1024;
inline constexpr size_t kMaxSegmentBytes = 200;

// Which bytes of an object a Get returns. A range must overlap the object (OUT_OF_RANGE
// otherwise, also for any range of an empty object); one that runs past the end is cut there.
class ByteRange {
 public:
  // The whole object (also an empty one).
  static ByteRange All() { return ByteRange(Kind::kAll, 0, 0); }
  // [offset, offset + length); length > 0.
  static ByteRange Span(uint64_t offset, uint64_t length) {
    return ByteRange(Kind::kSpan, offset, length);
  }
  // [offset, end).
  static ByteRange From(uint64_t offset) { return ByteRange(Kind::kSpan, offset, kToEnd); }
  // The last `length` bytes (the whole object if it is shorter); length > 0.
  static ByteRange Suffix(uint64_t length) { return ByteRange(Kind::kSuffix, 0, length); }

  enum class Kind { kAll, kSpan, kSuffix };
  static constexpr uint64_t kToEnd = std::numeric_limits<uint64_t>::max();

  Kind kind() const { return kind_; }
  uint64_t offset() const { return offset_; }
  uint64_t length() const { return length_; }  // kToEnd for From()

 private:
  ByteRange(Kind kind, uint64_t offset, uint64_t length)
      : kind_(kind), offset_(offset), length_(length) {}
  Kind kind_;
  uint64_t offset_;
  uint64_t length_;
};

struct PutOptions {
  // Create only if the key does not exist (S3 `If-None-Match: *`); ALREADY_EXISTS otherwise.
  bool if_absent = false;
};

// What Head returns and List lists.
struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  // Changes whenever the object's contents change. Opaque, and only comparable with etags
  // of the same store (S3: the MD5 hex of the contents; local: the CRC32C hex). List leaves
  // it empty in the local store.
  std::string etag;
};

struct ListResult {
  std::vector<ObjectInfo> objects;  // in key order
  // More keys match: list again with start_after = objects.back().key.
  bool truncated = false;
};

class ObjectStore {
 public:
  // No limit on List: every page is fetched.
  static constexpr size_t kNoLimit = std::numeric_limits<size_t>::max();

  virtual ~ObjectStore() = default;

  // Stores `data` under `key` atomically (readers see the old or the new object, never a
  // mix) and durably (an OK survives a crash). Returns the new etag.
  virtual absl::StatusOr<std::string> Put(std::string_view key, std::string_view data,
                                          const PutOptions& options, absl::Time deadline) = 0;
  virtual absl::StatusOr<std::string> Get(std::string_view key, const ByteRange& range,
                                          absl::Time deadline) = 0;
  // Who checks the bytes of a GetShared against the object's checksum.
  enum class Checksum {
    kStore,   // the store, as Get does (DATA_LOSS on a mismatch)
    kCaller,  // the caller: the bytes are a format that checksums every part itself (a sealed
              // segment), so the store spares a pass over them where it can (the local store)
  };
  // The whole object, as Get(key, ByteRange::All()), in memory that stays valid while the
  // result's owner is held — for a reader that keeps views into it (a loaded sealed segment's
  // columns). The local store maps its file instead of copying it; by default, Get's string.
  virtual absl::StatusOr<SharedBytes> GetShared(std::string_view key, absl::Time deadline,
                                                Checksum checksum = Checksum::kStore);
  // Whether GetShared maps (page cache, no copy in the heap): then reading back an object just
  // written costs no memory of the process's own.
  virtual bool MapsObjects() const { return false; }
  virtual absl::StatusOr<ObjectInfo> Head(std::string_view key, absl::Time deadline) = 0;
  // Up to `limit` (>= 1) objects whose key starts with `prefix` and sorts after
  // `start_after` (bytewise), in key order.
  virtual absl::StatusOr<ListResult> List(std::string_view prefix, std::string_view start_after,
                                          size_t limit, absl::Time deadline) = 0;
  // Idempotent: OK also when the key does not exist (as in S3).
  virtual absl::Status Delete(std::string_view key, absl::Time deadline) = 0;
};

// INVALID_ARGUMENT unless `key` follows the key rules above.
absl::Status ValidateKey(std::string_view key);
// INVALID_ARGUMENT unless `prefix` (or a start_after) is empty or follows the charset, has no
// leading '/', no "//" and no "." or ".." segment (a trailing '/' is allowed).
absl::Status ValidatePrefix(std::string_view prefix);
// INVALID_ARGUMENT for a Span/Suffix of length 0.
absl::Status ValidateRange(const ByteRange& range);
// The common argument checks of List.
absl::Status ValidateList(std::string_view prefix, std::string_view start_after, size_t limit);

// The bytes a range selects of an object of `size` bytes: [*begin, *end). OUT_OF_RANGE when
// it does not overlap.
absl::Status ResolveRange(const ByteRange& range, uint64_t size, uint64_t* begin, uint64_t* end);

}  // namespace kf::object
