// Helpers the backend tests share (every backend, any WalBackend): open options, synchronous
// appends and reads.
#pragma once

#include <future>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "wal/backend.h"

namespace kf::wal::testing {

inline OpenOptions Writer(const std::string& pchannel, int64_t term) {
  OpenOptions o;
  o.pchannel = pchannel;
  o.term = Term(term);
  return o;
}

// Appends and waits for the callback: the id, or the callback's (or Append's) error.
inline absl::StatusOr<MessageId> AppendSync(WalBackend* b, std::string data) {
  std::promise<absl::Status> done;
  auto fut = done.get_future();
  auto id = b->Append(std::move(data), [&done](absl::Status s) { done.set_value(s); });
  if (!id.ok()) return id.status();
  absl::Status s = fut.get();
  if (!s.ok()) return s;
  return id;
}

// Reads from `options` until `count` entries were read (an error if one does not come within
// `wait`).
inline absl::StatusOr<std::vector<Entry>> ReadN(WalBackend* b, const ReadOptions& options,
                                                size_t count,
                                                absl::Duration wait = absl::Seconds(10)) {
  auto scanner = b->Read(options);
  if (!scanner.ok()) return scanner.status();
  std::vector<Entry> out;
  while (out.size() < count) {
    auto e = (*scanner)->Next(absl::Now() + wait);
    if (!e.ok()) return e.status();
    out.push_back(std::move(*e));
  }
  return out;
}

// Every entry from the earliest until none arrives within `quiet` (for logs that no longer
// change).
inline absl::StatusOr<std::vector<Entry>> ReadUntilQuiet(
    WalBackend* b, absl::Duration quiet = absl::Milliseconds(300)) {
  auto scanner = b->Read(ReadOptions{});
  if (!scanner.ok()) return scanner.status();
  std::vector<Entry> out;
  for (;;) {
    auto e = (*scanner)->Next(absl::Now() + quiet);
    if (absl::IsDeadlineExceeded(e.status())) return out;
    if (!e.ok()) return e.status();
    out.push_back(std::move(*e));
  }
}

}  // namespace kf::wal::testing
