// Helpers shared by the local backend tests: synchronous appends, reading all.
#pragma once

#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "wal/backend.h"
#include "wal/testing/backend_test_util.h"

namespace kf::wal::local::testing {

using wal::testing::AppendSync;
using wal::testing::ReadN;
using wal::testing::Writer;

// Everything from the earliest entry up to NextId().
inline absl::StatusOr<std::vector<Entry>> ReadAll(WalBackend* b) {
  auto scanner = b->Read(ReadOptions{});
  if (!scanner.ok()) return scanner.status();
  const uint64_t end = b->NextId().entry();
  std::vector<Entry> out;
  for (;;) {
    auto e = (*scanner)->Next(absl::Now() + absl::Milliseconds(out.empty() ? 50 : 20));
    if (absl::IsDeadlineExceeded(e.status())) break;
    if (!e.ok()) return e.status();
    out.push_back(std::move(*e));
    if (out.back().id.entry() + 1 >= end) break;
  }
  return out;
}

}  // namespace kf::wal::local::testing
