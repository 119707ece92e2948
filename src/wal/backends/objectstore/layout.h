// Names and ids of the objectstore WAL backend (docs/objectstore-wal.md):
//   <root>/<pchannel>/<segment:020>/<block:020>   block objects (data or fence)
//   <root>/<pchannel>/<segment:020>/m<first:020>-<end:020>   compacted blocks [first, end)
//   <meta_prefix><pchannel>                       the log's ObjectLogMeta in the metadata store
//
// An entry's id is (segment, block << kEntryBits | index in block): the object holding any id
// follows from the id alone (no index lookup), and a block's key depends only on its position,
// so a fence object created at that key makes the fenced writer's upload of it fail.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "message/message_id.h"

namespace kf::wal::objectstore {

inline constexpr int kEntryBits = 20;
inline constexpr uint64_t kMaxEntriesPerBlock = uint64_t{1} << kEntryBits;

constexpr uint64_t EntryOf(uint64_t block, uint64_t index) { return block << kEntryBits | index; }
constexpr uint64_t BlockOf(uint64_t entry) { return entry >> kEntryBits; }
constexpr uint64_t IndexOf(uint64_t entry) { return entry & (kMaxEntriesPerBlock - 1); }
inline MessageId IdOf(uint64_t segment, uint64_t entry) {
  return MessageId(WalKind::kObjectStore, segment, entry);
}

class Layout {
 public:
  Layout(std::string root, std::string meta_prefix, std::string pchannel);

  const std::string& pchannel() const { return pchannel_; }
  const std::string& meta_key() const { return meta_key_; }
  // "<root>/<pchannel>/": every object of the log.
  const std::string& log_prefix() const { return log_prefix_; }
  std::string SegmentPrefix(uint64_t segment) const;  // ends with '/'
  std::string BlockKey(uint64_t segment, uint64_t block) const;
  // The compacted object of blocks [first, end): "<segment prefix>m<first:020>-<end:020>".
  std::string MergedKey(uint64_t segment, uint64_t first, uint64_t end) const;
  // The block index of a key under SegmentPrefix(segment); nullopt for any other key.
  std::optional<uint64_t> BlockOfKey(uint64_t segment, std::string_view key) const;
  // The segment id of a key under log_prefix(); nullopt for any other key.
  std::optional<uint64_t> SegmentOfKey(std::string_view key) const;

 private:
  const std::string pchannel_;
  const std::string log_prefix_;
  const std::string meta_key_;
};

}  // namespace kf::wal::objectstore
