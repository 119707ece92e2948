// MemoryWalBackend: an in-memory WalBackend for adaptor unit tests (STYLE: every storage
// interface has an in-memory fake). Entries become durable when the test says so
// (AutoDurable, or MakeDurable one by one), and enqueue failures can be injected, so tests
// can drive group commit, ordering and retry paths deterministically.
//
// Thread-safe.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "wal/backend.h"

namespace kf::wal::testing {

class MemoryWalBackend final : public WalBackend {
 public:
  explicit MemoryWalBackend(std::string pchannel, Term term = Term(1), bool auto_durable = true);

  std::string_view pchannel() const override { return pchannel_; }
  Term term() const override { return term_; }
  absl::StatusOr<MessageId> Append(std::string data, AppendCallback done) override;
  absl::StatusOr<std::unique_ptr<BackendScanner>> Read(const ReadOptions& options) override;
  MessageId NextId() const override;
  absl::StatusOr<MessageId> TailStart(uint64_t bytes) override;
  absl::Status Truncate(const MessageId& id) override;
  absl::Status Close() override;

  // Test controls.
  void FailNextAppends(int n, absl::Status status);  // enqueue failures (nothing stored)
  void MakeDurable(size_t n);  // completes the n oldest pending entries (when !auto_durable)
  void FailPending(absl::Status status);      // fails every pending entry's callback
  std::vector<std::string> Attempts() const;  // data of every Append call, failed ones too
  std::vector<std::string> DurableEntries() const;
  // Shares the stored log with a new instance (a "restart" of the same pchannel).
  std::unique_ptr<MemoryWalBackend> Reopen(Term term) const;

 private:
  struct Log;
  MemoryWalBackend(std::string pchannel, Term term, bool auto_durable, std::shared_ptr<Log> log);

  const std::string pchannel_;
  const Term term_;
  const bool auto_durable_;
  std::shared_ptr<Log> log_;
};

}  // namespace kf::wal::testing
