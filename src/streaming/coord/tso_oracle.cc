#include "streaming/coord/tso_oracle.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "spdlog/spdlog.h"

namespace kf::streaming {
namespace {

// Far below 2^64 so that first + count and the mark's window never overflow; physical time
// reaches it in the year ~2.2 million.
constexpr uint64_t kMaxTimeTick = uint64_t{1} << 62;

uint64_t SystemNowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

struct StoredMark {
  uint64_t mark = 0;
  int64_t mod_revision = 0;  // 0: the key is absent (a new cluster)
};

absl::StatusOr<StoredMark> ReadMark(meta::MetaStore* store, const std::string& key,
                                    absl::Time deadline) {
  absl::StatusOr<meta::GetResult> got = store->Get(key, deadline);
  if (absl::IsNotFound(got.status())) return StoredMark{};
  if (!got.ok()) return got.status();
  StoredMark out;
  if (!absl::SimpleAtoi(got->kv.value, &out.mark) || out.mark > kMaxTimeTick) {
    return absl::DataLossError(
        absl::StrCat("metadata key ", key, ": timestamp mark '", got->kv.value, "' is corrupt"));
  }
  out.mod_revision = got->kv.mod_revision;
  return out;
}

// A store failure as the TimestampSource contract words it: retryable, nothing handed out.
absl::Status Unreachable(const absl::Status& cause, std::string_view what) {
  return absl::UnavailableError(
      absl::StrCat("timestamp oracle: ", ToAbsl(what), ": ", cause.ToString()));
}

}  // namespace

TimestampOracle::TimestampOracle(meta::MetaStore* store, std::string key, Options options)
    : store_(store),
      key_(std::move(key)),
      options_(std::move(options)),
      refusal_(absl::UnavailableError("timestamp oracle: not active")) {}

absl::StatusOr<std::unique_ptr<TimestampOracle>> TimestampOracle::Open(meta::MetaStore* store,
                                                                       std::string key,
                                                                       Options options,
                                                                       absl::Time deadline) {
  auto oracle = std::make_unique<TimestampOracle>(store, std::move(key), std::move(options));
  if (absl::Status s = oracle->Activate(deadline); !s.ok()) return s;
  return oracle;
}

uint64_t TimestampOracle::NowTick() const {
  const uint64_t ms = options_.now_ms ? options_.now_ms() : SystemNowMs();
  return ComposeTimeTick(ms, 0).value();
}

absl::Status TimestampOracle::Activate(absl::Time deadline) {
  absl::MutexLock raise(&raise_mu_);
  absl::StatusOr<StoredMark> stored = ReadMark(store_, key_, deadline);
  if (!stored.ok()) return stored.status();
  absl::MutexLock l(&mu_);
  ++generation_;
  mark_ = stored->mark;
  mod_revision_ = stored->mod_revision;
  // Everything below the mark may have been handed out by whoever raised it last.
  last_ = std::max(last_, stored->mark);
  unsure_ = false;
  refusal_ = absl::OkStatus();
  return absl::OkStatus();
}

void TimestampOracle::Deactivate(absl::Status why) {
  if (why.ok()) why = absl::UnavailableError("timestamp oracle: not active");
  absl::MutexLock l(&mu_);
  ++generation_;
  refusal_ = std::move(why);
}

absl::Status TimestampOracle::state() const {
  absl::MutexLock l(&mu_);
  return refusal_;
}

uint64_t TimestampOracle::mark() const {
  absl::MutexLock l(&mu_);
  return mark_;
}

absl::StatusOr<TimeTick> TimestampOracle::Allocate(uint32_t count) {
  return AllocateBatch(count, TimeTick(0));
}

absl::StatusOr<TimeTick> TimestampOracle::AllocateBatch(uint32_t count, TimeTick at_least,
                                                        absl::Time deadline) {
  if (absl::Status s = CheckBatch(count, at_least); !s.ok()) return s;
  const uint64_t now = NowTick();
  for (;;) {
    uint64_t last = 0;  // the highest timestamp of the range
    absl::StatusOr<std::optional<TimeTick>> claimed = ClaimBelowMark(count, at_least, now, &last);
    if (!claimed.ok()) return claimed.status();
    if (claimed->has_value()) return **claimed;
    // Not covered by the mark: raise it, then claim again (another caller may have raised it
    // or claimed part of the new window meanwhile).
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError("timestamp oracle: deadline passed before the mark rose");
    }
    if (absl::Status s = RaiseMarkAbove(last, deadline); !s.ok()) return s;
  }
}

absl::StatusOr<std::optional<TimeTick>> TimestampOracle::TryAllocateBatch(uint32_t count,
                                                                          TimeTick at_least) {
  if (absl::Status s = CheckBatch(count, at_least); !s.ok()) return s;
  uint64_t last = 0;
  return ClaimBelowMark(count, at_least, NowTick(), &last);
}

absl::Status TimestampOracle::CheckBatch(uint32_t count, TimeTick at_least) {
  if (count == 0 || count > kMaxBatch) {
    return absl::InvalidArgumentError(
        absl::StrCat("timestamp count must be in [1, ", kMaxBatch, "], got ", count));
  }
  if (at_least.value() >= kMaxTimeTick) {
    return absl::InvalidArgumentError(
        absl::StrCat("at_least ", at_least.value(), " is beyond the timestamp range"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<TimeTick>> TimestampOracle::ClaimBelowMark(uint32_t count,
                                                                        TimeTick at_least,
                                                                        uint64_t now,
                                                                        uint64_t* last) {
  absl::MutexLock l(&mu_);
  if (!refusal_.ok()) return refusal_;
  const uint64_t first = std::max({now, last_ + 1, at_least.value() + 1});
  *last = first + count - 1;
  if (*last >= mark_) return std::nullopt;
  last_ = *last;
  return TimeTick(first);
}

absl::Status TimestampOracle::Observe(TimeTick t) {
  if (t.value() >= kMaxTimeTick) {
    return absl::InvalidArgumentError(
        absl::StrCat("observed timestamp ", t.value(), " is beyond the timestamp range"));
  }
  {
    absl::MutexLock l(&mu_);
    if (!refusal_.ok()) return refusal_;
    last_ = std::max(last_, t.value());
    if (t.value() < mark_) return absl::OkStatus();
  }
  return RaiseMarkAbove(t.value(), absl::InfiniteFuture());
}

absl::Status TimestampOracle::RaiseMarkAbove(uint64_t last, absl::Time limit) {
  absl::MutexLock raise(&raise_mu_);
  uint64_t generation = 0;
  int64_t revision = 0;
  bool unsure = false;
  {
    absl::MutexLock l(&mu_);
    if (!refusal_.ok()) return refusal_;
    if (last < mark_) return absl::OkStatus();  // raised by another caller meanwhile
    generation = generation_;
    revision = mod_revision_;
    unsure = unsure_;
  }
  const absl::Time deadline = std::min(limit, absl::Now() + options_.call_timeout);
  if (unsure) {
    // The previous raise may or may not have landed: look before writing again.
    absl::StatusOr<StoredMark> stored = ReadMark(store_, key_, deadline);
    if (!stored.ok()) return Unreachable(stored.status(), "re-reading the mark");
    if (stored->mod_revision != revision) {
      return Depose(generation, absl::StrCat("the mark moved to ", stored->mark,
                                             " after a raise of unknown outcome"));
    }
    absl::MutexLock l(&mu_);
    if (generation == generation_) unsure_ = false;
  }
  const uint64_t physical_ms = PhysicalMs(TimeTick(last)) + 1;
  const uint64_t target = ComposeTimeTick(physical_ms + options_.window_ms, 0).value();
  absl::StatusOr<meta::TxnResult> txn =
      store_->Txn({meta::Compare::ModRevisionIs(key_, revision)},
                  {meta::Op::Put(key_, absl::StrCat(target))}, {}, deadline);
  {
    absl::MutexLock l(&mu_);
    if (generation != generation_) return absl::OkStatus();  // the caller re-checks the state
    if (!txn.ok()) {
      unsure_ = true;
      return Unreachable(txn.status(), "raising the mark");
    }
    if (txn->succeeded) {
      mark_ = target;
      mod_revision_ = txn->revision;
      return absl::OkStatus();
    }
  }
  return Depose(generation, "another coordinator raised the mark");
}

absl::Status TimestampOracle::Depose(uint64_t generation, const std::string& why) {
  absl::Status refusal;
  bool deposed = false;
  {
    absl::MutexLock l(&mu_);
    if (generation == generation_) {
      ++generation_;
      refusal_ = absl::FailedPreconditionError(
          absl::StrCat("timestamp oracle deposed: ", why, " (key ", key_, ")"));
      deposed = true;
    }
    refusal = refusal_;
  }
  if (deposed) {
    spdlog::warn("{}", std::string(refusal.message()));
    if (options_.on_deposed) options_.on_deposed();
  }
  // Re-activated or deactivated meanwhile: the caller re-checks the state.
  return refusal.ok() ? absl::OkStatus() : refusal;
}

}  // namespace kf::streaming
