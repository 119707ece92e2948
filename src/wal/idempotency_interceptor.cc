#include "wal/idempotency_interceptor.h"

#include <limits>
#include <optional>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "wal/collections/collection_table.h"

namespace kf::wal {

std::unique_ptr<ResultTable> NewIdempotencyTable(size_t window_per_producer) {
  return std::make_unique<ResultTable>(window_per_producer, /*max_producers=*/65536);
}

std::unique_ptr<ResultTable> NewBroadcastTable() {
  // Never evicts a vchannel: a forgotten broadcast would be refused, not deduplicated.
  return std::make_unique<ResultTable>(kBroadcastWindow,
                                       /*max_producers=*/std::numeric_limits<size_t>::max());
}

size_t BroadcastInterceptor::Admit(std::span<AppendContext> run) {
  size_t duplicates = 0;
  for (AppendContext& a : run) {
    if (a.stage != AppendContext::Stage::kAdmitting || !a.exclusive) continue;
    std::optional<IdempotencyKey> key = BroadcastKey(a.msg);
    if (!key) continue;
    if (table_->Begin(*key, a.done) == ResultTable::Outcome::kDuplicate) {
      a.TakeOver(absl::AbortedError("duplicate of a broadcast"));
      ++duplicates;
      continue;
    }
    a.broadcast_key = std::move(key);
  }
  return duplicates;
}

void BroadcastInterceptor::Finish(std::span<AppendContext* const> appends) {
  for (AppendContext* a : appends) {
    if (!a->broadcast_key) continue;
    if (a->result.ok()) {
      table_->Complete(*a->broadcast_key, *a->result);
    } else {
      table_->Fail(*a->broadcast_key, a->result.status());
    }
  }
}

namespace {

// The `_ik` of `a`, parsed into a.key; false (and `a` rejected) when malformed.
bool ParseKey(AppendContext& a) {
  std::optional<std::string_view> ik = a.msg.idempotency_key();
  if (!ik) return true;
  absl::StatusOr<IdempotencyKey> key = ParseIdempotencyKey(*ik);
  if (!key.ok()) {
    a.Reject(key.status());
    return false;
  }
  a.key = std::move(*key);
  return true;
}

// `a` is a duplicate: the original holds the key (and the broadcast key too: same message);
// this copy holds nothing, and lets go of the broadcast key it took.
void Duplicate(AppendContext& a) {
  a.key.reset();
  a.TakeOver(absl::AbortedError("duplicate of an `_ik` append"));
}

}  // namespace

size_t IdempotencyInterceptor::Admit(std::span<AppendContext> run) {
  if (run.size() == 1) {  // a single Append's
    AppendContext& a = run.front();
    if (a.stage != AppendContext::Stage::kAdmitting) return 0;
    if (!ParseKey(a)) return 1;
    if (!a.key || table_->Begin(*a.key, a.done) != ResultTable::Outcome::kDuplicate) return 0;
    Duplicate(a);
    return 1;
  }
  absl::InlinedVector<ResultTable::Begun, InterceptorChain::kInlineRun> begun;
  size_t stopped = 0;
  for (AppendContext& a : run) {
    if (a.stage != AppendContext::Stage::kAdmitting) continue;
    if (!ParseKey(a)) {
      ++stopped;
      continue;
    }
    if (a.key) begun.push_back({.key = &*a.key, .waiter = &a.done});
  }
  if (begun.empty()) return stopped;
  // One lock of the table for the run: an appender and the completions contend for it.
  table_->BeginAll(std::span(begun));
  size_t next = 0;
  for (AppendContext& a : run) {
    if (!a.key) continue;  // only this run's keys are set: those just begun
    if (begun[next++].outcome != ResultTable::Outcome::kDuplicate) continue;
    Duplicate(a);
    ++stopped;
  }
  return stopped;
}

void IdempotencyInterceptor::Finish(std::span<AppendContext* const> appends) {
  if (appends.size() == 1) {  // a single Append's
    AppendContext& a = *appends.front();
    if (!a.key) return;
    const ResultTable::Finished settled{&*a.key, &a.result};
    table_->FinishAll(std::span(&settled, 1));
    return;
  }
  absl::InlinedVector<ResultTable::Finished, InterceptorChain::kInlineRun> settled;
  for (AppendContext* a : appends) {
    if (a->key) settled.push_back({&*a->key, &a->result});
  }
  if (!settled.empty()) table_->FinishAll(std::span(settled));
}

}  // namespace kf::wal
