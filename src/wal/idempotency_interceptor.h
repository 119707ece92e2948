// The WAL adaptor's deduplication as members of the append chain (interceptor.h), each over an
// IdempotencyTable (idempotency.h) that recovery rebuilds from the log (recovery.h):
// - BroadcastInterceptor: a broadcaster's DDL copy (BroadcastKey: {vchannel, broadcast id}),
//   also retried after a coordinator restart, gets the original result instead of a second
//   append. Its Admit comes before the `_ik` check: a broadcast duplicate leaves no `_ik` state
//   behind, and a retry under the same `_ik` comes back here. The table remembers the last
//   kBroadcastWindow broadcasts of every vchannel ever seen (never evicting one: a forgotten
//   broadcast would be refused, not deduplicated), rebuilt from every DDL of the log.
// - IdempotencyInterceptor: a retried append (`_ik` = "<producer>:<sequence>") gets the original
//   result, waiting for it while the original is in flight (docs/semantics.md §3). Admit parses
//   the key (INVALID_ARGUMENT) and registers the whole run under one lock of the table; Finish
//   settles the run's keys under one lock too. A retry older than the window is refused with
//   FAILED_PRECONDITION. Rebuilt from the log's tail.
// Both take a duplicate's answer over in Admit (AppendContext::TakeOver) and finish what they
// admitted in Finish: the result is remembered (OK) or forgotten (an error, so that a retry
// appends anew), and the duplicates waiting for it answered.
//
// Thread-safety: thread-safe (each table has its own lock).
#pragma once

#include <memory>

#include "wal/idempotency.h"
#include "wal/interceptor.h"

namespace kf::wal {

using ResultTable = IdempotencyTable<AppendResult>;

// The tables as the interceptors want them (recovery fills them).
std::unique_ptr<ResultTable> NewIdempotencyTable(size_t window_per_producer);
std::unique_ptr<ResultTable> NewBroadcastTable();

class BroadcastInterceptor final : public AppendInterceptor {
 public:
  BroadcastInterceptor() : table_(NewBroadcastTable()) {}

  uint32_t hooks() const override { return kAdmit | kFinish; }
  uint32_t ordinary_hooks() const override { return 0; }  // only exclusive types are broadcast
  size_t Admit(std::span<AppendContext> run) override;
  void Finish(std::span<AppendContext* const> appends) override;

  // The recovered table, before the first append.
  void Restore(std::unique_ptr<ResultTable> table) { table_ = std::move(table); }

 private:
  std::unique_ptr<ResultTable> table_;
};

class IdempotencyInterceptor final : public AppendInterceptor {
 public:
  explicit IdempotencyInterceptor(size_t window_per_producer)
      : table_(NewIdempotencyTable(window_per_producer)) {}

  uint32_t hooks() const override { return kAdmit | kFinish; }
  size_t Admit(std::span<AppendContext> run) override;
  void Finish(std::span<AppendContext* const> appends) override;

  // The recovered table, before the first append.
  void Restore(std::unique_ptr<ResultTable> table) { table_ = std::move(table); }

 private:
  std::unique_ptr<ResultTable> table_;
};

}  // namespace kf::wal
