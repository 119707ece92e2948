// What the crash test and its child process share: where the log lives and how a WAL is opened
// over it (the child appends to it, the parent reopens it at a higher term after each kill).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "storage/tso/timestamp_allocator.h"
#include "wal/backends/testing/backend_under_test.h"
#include "wal/wal.h"

namespace kf::crash {

inline constexpr char kPChannel[] = "kf-dml_0";

struct Env {
  std::filesystem::path dir;
  wal::testing::BackendKind kind;
  std::string tso_path() const { return (dir / "tso").string(); }
};

// An open WAL and the stores under it (declared first: destroyed after the WAL).
struct OpenedWal {
  std::unique_ptr<wal::testing::BackendUnderTest> log;
  std::unique_ptr<wal::Wal> wal;
};

inline absl::StatusOr<OpenedWal> OpenAt(const Env& env, Term term, TimestampAllocator* tso) {
  OpenedWal out;
  out.log = std::make_unique<wal::testing::BackendUnderTest>(env.kind, env.dir, kPChannel);
  auto backend = out.log->Open(term);
  if (!backend.ok()) return backend.status();
  auto wal =
      wal::OpenWal({.pchannel = kPChannel, .tso = tso, .timetick_interval = absl::Milliseconds(5)},
                   std::move(*backend));
  if (!wal.ok()) return wal.status();
  out.wal = *std::move(wal);
  return out;
}

}  // namespace kf::crash
