#include "wal/backends/objectstore/block_fuzz_body.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "common/coding.h"
#include "wal/backends/objectstore/block_format.h"
#include "wal/backends/objectstore/layout.h"

namespace kf::wal::objectstore {

void RunBlockFuzzInput(std::string_view data) {
  // Take the position from the input itself, so the position check does not hide the rest.
  const uint64_t segment = data.size() >= 24 ? DecodeFixed64(data.data() + 16) : 0;
  const uint64_t block = data.size() >= 32 ? DecodeFixed64(data.data() + 24) : 0;
  BlockHeader header;
  std::vector<std::string> entries;
  uint64_t expected = EntryOf(block, 0);
  const absl::Status s =
      DecodeBlock(data, segment, block, "fuzz", &header, [&](uint64_t id, std::string_view e) {
        if (id != expected++) std::abort();  // ids are dense from the block's first
        entries.emplace_back(e);
      });
  if (!s.ok()) {
    if (!absl::IsDataLoss(s)) std::abort();
    return;
  }
  std::string again;
  if (header.kind == BlockKind::kFence) {
    again = EncodeFenceBlock(header.term, segment, block);
  } else {
    BlockBuilder b;
    b.Begin(header.term, segment, block);
    for (const auto& e : entries) b.Add(e);
    b.Finish();
    again = b.bytes();
  }
  if (again != data) std::abort();
}

}  // namespace kf::wal::objectstore
