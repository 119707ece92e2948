#include "wal/txn/txn_manager.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "wal/txn/txn_keepalive.h"

namespace kf::wal {
namespace {

absl::Status InvalidState(TxnId id, std::string_view what, std::string_view why) {
  return StreamingError(
      StreamingCode::kInvalidTransactionState,
      absl::StrCat(ToAbsl(what), " of transaction ", id.value(), ": ", ToAbsl(why)));
}

absl::Status Expired(TxnId id, std::string_view what) {
  return StreamingError(StreamingCode::kTransactionExpired,
                        absl::StrCat(ToAbsl(what), " of transaction ", id.value(),
                                     ": the transaction expired (its keepalive passed with no "
                                     "body); retry the whole transaction"));
}

bool IsFinished(TxnManager::State s) {
  return s != TxnManager::State::kActive && s != TxnManager::State::kCommitting;
}

}  // namespace

std::string_view TxnStateName(TxnManager::State state) {
  switch (state) {
    case TxnManager::State::kActive:
      return "active";
    case TxnManager::State::kCommitting:
      return "committing";
    case TxnManager::State::kCommitted:
      return "committed";
    case TxnManager::State::kRolledBack:
      return "rolled back";
    case TxnManager::State::kExpired:
      return "expired";
    case TxnManager::State::kFailed:
      return "failed";
  }
  return "unknown";
}

TxnManager::TxnManager(TxnManagerOptions options) : options_(options) {}

TxnManager::~TxnManager() = default;

absl::StatusOr<kingfisher::v1::TxnContext> TxnManager::BeginTxn(std::string_view vchannel,
                                                                int64_t keepalive_ms, TimeTick tt) {
  if (keepalive_ms < 0) {
    return StreamingError(StreamingCode::kInvalidArgument,
                          absl::StrCat("BeginTxn keepalive must be >= 0 ms (0 = default ",
                                       kDefaultTxnKeepaliveMs, " ms), got ", keepalive_ms));
  }
  if (vchannel.empty()) {
    return StreamingError(StreamingCode::kInvalidArgument,
                          "BeginTxn needs a vchannel: a transaction lives on one vchannel");
  }
  const TxnId id(static_cast<int64_t>(tt.value()));
  absl::MutexLock lock(&mu_);
  if (live_.contains(id) || retired_.contains(id)) {
    // Timeticks never repeat on a pchannel; a repeat is a sequencer bug, not bad input.
    return StreamingError(StreamingCode::kInner,
                          absl::StrCat("BeginTxn: transaction id ", id.value(),
                                       " (the Begin's timetick) is already in use"));
  }
  Txn txn;
  RETURN_IF_ERROR(CheckOpenBytesLocked(txn.bytes, "BeginTxn"));
  open_bytes_ += txn.bytes;
  txn.vchannel = std::string(vchannel);
  txn.keepalive_ms = EffectiveKeepaliveMs(keepalive_ms);
  txn.begin_tt = tt;
  txn.deadline = TxnDeadline(tt, txn.keepalive_ms);
  deadlines_.emplace(txn.deadline, id);
  active_.insert(id);
  kingfisher::v1::TxnContext ctx;
  ctx.set_txn_id(id.value());
  ctx.set_keepalive_ms(txn.keepalive_ms);
  live_.emplace(id, std::move(txn));
  return ctx;
}

void TxnManager::SetOpenedAfter(TimeTick tt) {
  absl::MutexLock lock(&mu_);
  opened_after_ = tt;
}

void TxnManager::SetBeginId(TxnId txn_id, const MessageId& begin_id) {
  absl::MutexLock lock(&mu_);
  auto it = live_.find(txn_id);
  if (it != live_.end()) it->second.begin_id = begin_id;
}

absl::Status TxnManager::CheckActiveLocked(TxnId txn_id, std::string_view vchannel,
                                           std::string_view what) {
  auto it = live_.find(txn_id);
  std::optional<State> state;
  absl::Status failure;
  if (it != live_.end()) {
    state = it->second.state;
    failure = it->second.failure;
  } else if (auto r = retired_.find(txn_id); r != retired_.end()) {
    state = r->second.state;
    failure = r->second.failure;
  }
  if (!state) {
    if (txn_id.value() >= 0 && static_cast<uint64_t>(txn_id.value()) <= opened_after_.value()) {
      // docs/semantics.md §3: transactions do not survive a reassignment or restart; the client's
      // remedy is the expired one (retry the whole transaction), not "fail".
      return StreamingError(
          StreamingCode::kTransactionExpired,
          absl::StrCat(ToAbsl(what), " of transaction ", txn_id.value(),
                       ": the transaction was begun under an earlier owner of the pchannel and "
                       "does not survive a reassignment or restart; retry the whole transaction"));
    }
    return InvalidState(txn_id, what, "unknown transaction (never begun on this pchannel)");
  }
  switch (*state) {
    case State::kActive:
      break;
    case State::kExpired:
      return Expired(txn_id, what);
    case State::kFailed:
      return InvalidState(txn_id, what,
                          absl::StrCat("the transaction failed: ", failure.message()));
    default:
      return InvalidState(
          txn_id, what, absl::StrCat("the transaction is already ", ToAbsl(TxnStateName(*state))));
  }
  if (vchannel != it->second.vchannel) {
    return InvalidState(
        txn_id, what,
        absl::StrCat("the transaction belongs to vchannel '", it->second.vchannel, "', not '",
                     ToAbsl(vchannel), "' (a transaction spans one vchannel)"));
  }
  return absl::OkStatus();
}

absl::Status TxnManager::CheckDeadlineLocked(TxnId txn_id, Txn& txn, TimeTick tt,
                                             std::string_view what) {
  if (tt <= txn.deadline) return absl::OkStatus();
  DeactivateLocked(txn_id, txn, State::kExpired);
  return Expired(txn_id, what);
}

absl::Status TxnManager::CheckOpenBytesLocked(uint64_t bytes, std::string_view what) const {
  if (options_.max_open_bytes == 0 || open_bytes_ + bytes <= options_.max_open_bytes) {
    return absl::OkStatus();
  }
  return StreamingError(
      StreamingCode::kRateLimited,
      absl::StrCat(ToAbsl(what), " of ", bytes, " bytes: the open transactions of this pchannel ",
                   "hold ", open_bytes_, " bytes, and may hold ", options_.max_open_bytes,
                   " (every reader holds them until they end); retry once some commit or roll "
                   "back"));
}

void TxnManager::DeactivateLocked(TxnId txn_id, Txn& txn, State state) {
  if (txn.state == State::kActive) {
    deadlines_.erase({txn.deadline, txn_id});
    active_.erase(txn_id);
    open_bytes_ -= txn.bytes;
  }
  txn.state = state;
}

void TxnManager::SettleLocked(TxnId txn_id, std::vector<ReadyGate>* ready) {
  auto it = live_.find(txn_id);
  if (it == live_.end() || it->second.inflight > 0) return;
  Txn& txn = it->second;
  if (txn.state == State::kCommitting) txn.state = State::kCommitted;
  if (!IsFinished(txn.state)) return;
  // A gate set by Commit reports OK, or the failure that hit the txn while it was committing;
  // either way only once nothing is in flight, so a commit is never acknowledged while one of
  // its bodies may still fail.
  if (txn.gate) {
    ready->push_back(
        {std::move(txn.gate), txn.state == State::kCommitted ? absl::OkStatus() : txn.failure});
  }
  retired_[txn_id] = Retired{txn.state, txn.failure};
  retired_order_.push_back(txn_id);
  live_.erase(it);
  while (retired_order_.size() > options_.retired_memory) {
    retired_.erase(retired_order_.front());
    retired_order_.pop_front();
  }
}

void TxnManager::FailLocked(TxnId txn_id, Txn& txn, absl::Status cause) {
  if (IsFinished(txn.state)) return;
  DeactivateLocked(txn_id, txn, State::kFailed);
  txn.failure = std::move(cause);
}

void TxnManager::Fire(std::vector<ReadyGate> ready) {
  for (auto& r : ready) std::move(r.gate)(std::move(r.status));
}

absl::Status TxnManager::AddBody(TxnId txn_id, std::string_view vchannel, TimeTick tt,
                                 uint64_t encoded_bytes) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckActiveLocked(txn_id, vchannel, "body"));
  Txn& txn = live_.find(txn_id)->second;
  if (absl::Status s = CheckDeadlineLocked(txn_id, txn, tt, "body"); !s.ok()) {
    std::vector<ReadyGate> none;  // an active txn has no gate
    SettleLocked(txn_id, &none);
    return s;
  }
  const uint64_t bytes = encoded_bytes + kTxnMessageBytes;
  if (options_.max_txn_bytes != 0 && txn.bytes + bytes > options_.max_txn_bytes) {
    return StreamingError(
        StreamingCode::kInvalidArgument,
        absl::StrCat("body of transaction ", txn_id.value(), ": ", bytes,
                     " bytes would take the transaction past its limit of ", options_.max_txn_bytes,
                     " bytes (it holds ", txn.bytes,
                     "): a committed transaction is delivered as one message and is bounded like "
                     "one; split the work over smaller transactions (this one may still commit "
                     "what it holds, or roll back)"));
  }
  RETURN_IF_ERROR(CheckOpenBytesLocked(bytes, "body"));
  txn.bytes += bytes;
  open_bytes_ += bytes;
  deadlines_.erase({txn.deadline, txn_id});
  txn.deadline = TxnDeadline(tt, txn.keepalive_ms);
  deadlines_.emplace(txn.deadline, txn_id);
  ++txn.inflight;
  return absl::OkStatus();
}

void TxnManager::BodyDurable(TxnId txn_id) {
  std::vector<ReadyGate> ready;
  {
    absl::MutexLock lock(&mu_);
    auto it = live_.find(txn_id);
    if (it == live_.end() || it->second.inflight == 0) return;
    --it->second.inflight;
    SettleLocked(txn_id, &ready);
  }
  Fire(std::move(ready));
}

void TxnManager::BodyFailed(TxnId txn_id, absl::Status cause) {
  std::vector<ReadyGate> ready;
  {
    absl::MutexLock lock(&mu_);
    auto it = live_.find(txn_id);
    if (it == live_.end() || it->second.inflight == 0) return;
    --it->second.inflight;
    FailLocked(txn_id, it->second, std::move(cause));
    SettleLocked(txn_id, &ready);
  }
  Fire(std::move(ready));
}

absl::Status TxnManager::Commit(TxnId txn_id, std::string_view vchannel, TimeTick tt,
                                CommitGate gate) {
  std::vector<ReadyGate> ready;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckActiveLocked(txn_id, vchannel, "CommitTxn"));
    Txn& txn = live_.find(txn_id)->second;
    if (absl::Status s = CheckDeadlineLocked(txn_id, txn, tt, "CommitTxn"); !s.ok()) {
      SettleLocked(txn_id, &ready);
      return s;
    }
    DeactivateLocked(txn_id, txn, State::kCommitting);
    txn.gate = std::move(gate);
    SettleLocked(txn_id, &ready);
  }
  Fire(std::move(ready));
  return absl::OkStatus();
}

absl::Status TxnManager::Rollback(TxnId txn_id, std::string_view vchannel, TimeTick tt) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckActiveLocked(txn_id, vchannel, "RollbackTxn"));
  Txn& txn = live_.find(txn_id)->second;
  std::vector<ReadyGate> none;  // only committing txns have gates
  if (absl::Status s = CheckDeadlineLocked(txn_id, txn, tt, "RollbackTxn"); !s.ok()) {
    SettleLocked(txn_id, &none);
    return s;
  }
  DeactivateLocked(txn_id, txn, State::kRolledBack);
  SettleLocked(txn_id, &none);
  return absl::OkStatus();
}

bool TxnManager::FailTxn(TxnId txn_id, absl::Status cause) {
  std::vector<ReadyGate> ready;
  {
    absl::MutexLock lock(&mu_);
    auto it = live_.find(txn_id);
    if (it == live_.end() || IsFinished(it->second.state)) return false;
    FailLocked(txn_id, it->second, std::move(cause));
    SettleLocked(txn_id, &ready);
  }
  Fire(std::move(ready));
  return true;
}

std::vector<TxnId> TxnManager::ObserveWatermark(TimeTick tt) {
  std::vector<TxnId> expired;
  absl::MutexLock lock(&mu_);
  std::vector<ReadyGate> none;  // only active txns expire; they have no gate
  while (!deadlines_.empty() && deadlines_.begin()->first < tt) {
    const TxnId id = deadlines_.begin()->second;
    DeactivateLocked(id, live_.find(id)->second, State::kExpired);
    SettleLocked(id, &none);
    expired.push_back(id);
  }
  return expired;
}

std::vector<TxnId> TxnManager::FailVChannel(std::string_view vchannel) {
  std::vector<TxnId> failed;
  absl::MutexLock lock(&mu_);
  for (TxnId id : active_) {
    if (live_.find(id)->second.vchannel == vchannel) failed.push_back(id);
  }
  std::vector<ReadyGate> none;  // only active txns are failed here; they have no gate
  for (TxnId id : failed) {
    FailLocked(id, live_.find(id)->second,
               StreamingError(StreamingCode::kInvalidTransactionState,
                              absl::StrCat("an exclusive message (DDL) on vchannel '",
                                           ToAbsl(vchannel), "' failed the transaction")));
    SettleLocked(id, &none);
  }
  return failed;
}

std::optional<ActiveBegin> TxnManager::EarliestActiveBegin() const {
  absl::MutexLock lock(&mu_);
  for (TxnId id : active_) {
    const Txn& txn = live_.find(id)->second;
    if (txn.begin_id) return ActiveBegin{id, txn.begin_tt, *txn.begin_id};
  }
  return std::nullopt;
}

std::optional<TxnManager::State> TxnManager::GetState(TxnId txn_id) const {
  absl::MutexLock lock(&mu_);
  if (auto it = live_.find(txn_id); it != live_.end()) return it->second.state;
  if (auto it = retired_.find(txn_id); it != retired_.end()) return it->second.state;
  return std::nullopt;
}

size_t TxnManager::LiveCount() const {
  absl::MutexLock lock(&mu_);
  return live_.size();
}

}  // namespace kf::wal
