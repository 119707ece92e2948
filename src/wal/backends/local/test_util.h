// Helpers shared by the local backend tests: temp dirs, synchronous appends, reading all.
#pragma once

#include <stdlib.h>

#include <future>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "wal/backend.h"

namespace kf::wal::local::testing {

inline std::string MakeTempDir(const std::string& tag) {
  std::string tmpl = ::testing::TempDir() + "/" + tag + "_XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
  return tmpl;
}

// Appends and waits for the callback. Returns the callback's status (or Append's error).
inline absl::StatusOr<MessageId> AppendSync(WalBackend* b, std::string data) {
  std::promise<absl::Status> done;
  auto fut = done.get_future();
  auto id = b->Append(std::move(data), [&done](absl::Status s) { done.set_value(s); });
  if (!id.ok()) return id.status();
  absl::Status s = fut.get();
  if (!s.ok()) return s;
  return id;
}

// Reads entries from `options` until `count` were read or `wait` passes without a new one.
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

inline OpenOptions Writer(const std::string& pchannel, int64_t term) {
  OpenOptions o;
  o.pchannel = pchannel;
  o.term = Term(term);
  return o;
}

}  // namespace kf::wal::local::testing
