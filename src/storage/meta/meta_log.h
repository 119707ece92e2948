// The embedded metadata store's files (byte layout in docs/meta-store-format.md):
//   meta-<seq>.log   append-only log of Mutation records, each with a length and a CRC32C
//   meta.snapshot    the whole state at one revision, plus the seq of the log that follows it
//
// MetaLogWriter appends records and fdatasyncs them; ParseMetaLog replays a log, cutting a
// torn tail and reporting corruption before the tail as DATA_LOSS.
//
// Thread-safety: MetaLogWriter is used by one thread at a time; the rest are pure functions.
// Errors: DATA_LOSS for corrupt bytes; I/O errors from the FileSystem. A failed append or sync
// is sticky: the writer refuses every later call (what reached the disk is unknown).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/fs/file_system.h"
#include "storage/meta/kv_state.h"

namespace kf::meta {

inline constexpr uint32_t kLogMagic = 0x4c4d464b;       // "KFML"
inline constexpr uint32_t kSnapshotMagic = 0x534d464b;  // "KFMS"
inline constexpr uint16_t kFormatVersion = 1;
inline constexpr size_t kLogHeaderSize = 16;    // magic, version, reserved, seq
inline constexpr size_t kRecordHeaderSize = 8;  // length, masked crc32c

std::string LogFileName(uint64_t seq);  // "meta-000000000001.log"
inline constexpr char kSnapshotFileName[] = "meta.snapshot";

// Record payload (kind byte + body) of a mutation, and back. DATA_LOSS on malformed bytes.
std::string EncodeMutation(const Mutation& m);
absl::StatusOr<Mutation> DecodeMutation(std::string_view payload);

// The bytes of log `seq`'s header, and of one record framing `payload` (an EncodeMutation):
// what MetaLogWriter writes.
std::string EncodeLogHeader(uint64_t seq);
std::string EncodeLogRecord(std::string_view payload);

struct ParsedLog {
  uint64_t seq = 0;
  std::vector<Mutation> mutations;
  uint64_t valid_bytes = 0;  // length of the intact prefix; the rest is a torn tail to cut
};
// Parses a whole log file. A last record that is incomplete or fails its checksum with
// nothing after it is a torn tail (a crash mid-append: never acknowledged); a bad record with
// intact bytes after it is DATA_LOSS.
absl::StatusOr<ParsedLog> ParseMetaLog(std::string_view contents);

struct Snapshot {
  uint64_t log_seq = 0;  // the log that continues this snapshot
  int64_t revision = 1;
  LeaseId next_lease_id = 1;
  std::map<LeaseId, KvState::Lease> leases;  // ttl only; keys are rebuilt from kvs
  std::vector<KeyValue> kvs;
};
std::string EncodeSnapshot(const Snapshot& s);
absl::StatusOr<Snapshot> DecodeSnapshot(std::string_view contents);

class MetaLogWriter {
 public:
  // Creates log `seq` in `dir` durably (header synced, directory synced).
  static absl::StatusOr<std::unique_ptr<MetaLogWriter>> Create(fs::FileSystem* fs,
                                                               const std::string& dir,
                                                               uint64_t seq);
  // Continues an existing log after cutting it to `valid_bytes` (the torn tail).
  static absl::StatusOr<std::unique_ptr<MetaLogWriter>> Reopen(fs::FileSystem* fs,
                                                               const std::string& path,
                                                               uint64_t seq, uint64_t valid_bytes);

  // Appends one record and fdatasyncs it; durable when OK.
  absl::Status AppendSync(const Mutation& m);
  uint64_t size() const { return file_->Size(); }
  uint64_t seq() const { return seq_; }
  absl::Status Close() { return file_->Close(); }

 private:
  MetaLogWriter(std::unique_ptr<fs::WritableFile> file, uint64_t seq)
      : file_(std::move(file)), seq_(seq) {}

  std::unique_ptr<fs::WritableFile> file_;
  const uint64_t seq_;
  absl::Status error_;  // sticky
};

}  // namespace kf::meta
