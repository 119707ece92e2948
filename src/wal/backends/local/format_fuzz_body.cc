#include "wal/backends/local/format_fuzz_body.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "format/record_batch.h"
#include "wal/backends/local/layout.h"

namespace kf::wal::local {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "format fuzz invariant broken: %s\n", what);
    std::abort();
  }
}

// Walks `data` as a segment: batch after batch while each one verifies. A verified batch must
// hand out exactly `count` entries filling its payload, and re-encoding them must reproduce
// its bytes exactly (the format has one encoding per content).
void WalkBatches(std::string_view data) {
  while (data.size() >= format::kBatchHeaderSize) {
    format::BatchHeader h;
    if (!format::ParseBatchHeader(data.data(), &h)) return;
    if (h.total_size() > data.size()) return;
    if (!format::VerifyBatch(data.data(), h, data.data() + format::kBatchHeaderSize)) return;
    std::vector<std::string> entries;
    uint64_t next = h.base_offset;
    absl::Status s = format::ForEachEntry(h, data.substr(format::kBatchHeaderSize, h.payload_len),
                                          [&](uint64_t offset, std::string_view entry) {
                                            Check(offset == next++, "entry offsets are dense");
                                            entries.emplace_back(entry);
                                          });
    if (!s.ok()) return;  // verified framing but inconsistent lengths: rejected, fine
    Check(entries.size() == h.count, "entry count matches the header");
    std::string again;
    format::BatchBuilder b;
    b.Begin(&again, h.base_offset);
    for (const auto& e : entries) b.Add(e);
    b.Finish();
    Check(again == data.substr(0, h.total_size()), "a verified batch re-encodes to itself");
    data.remove_prefix(h.total_size());
  }
}

}  // namespace

void RunFormatFuzzInput(std::string_view data) {
  WalkBatches(data);

  uint64_t base = 0;
  Term term;
  if (ParseSegmentFileName(data, &base, &term)) {
    Check(SegmentFileName(base, term) == data, "segment names round-trip");
  }
  if (ParseTermFileName(data, &term)) {
    Check(TermFileName(term) == data, "term file names round-trip");
  }
  auto seal = DecodeSealRecord(data, "fuzz");
  if (seal.ok()) Check(EncodeSealRecord(*seal) == data, "seal records round-trip");
}

}  // namespace kf::wal::local
