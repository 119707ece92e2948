// Test helpers for the write-ahead buffer tests: message builders, a fake clock and a fake
// catch-up scanner over an in-memory log. Test-only; not thread-safe unless stated.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "message/builders.h"
#include "message/message.h"
#include "wal/wal.h"

namespace kf::wal::testing {

inline MessageId Id(uint64_t offset) { return MessageId::Local(offset); }

// A persisted Insert-typed message at `offset` with timetick `tt`; `lc` is its LCMID (self when
// equal to offset). The payload pads the encoded size.
inline ImmutableMessagePtr Msg(uint64_t offset, uint64_t tt, std::string vchannel = "",
                               std::optional<uint64_t> lc = std::nullopt, size_t pad = 16) {
  MutableMessage m(MessageType::kInsert, std::string(pad, 'x'));
  if (!vchannel.empty()) m.set_vchannel(std::move(vchannel));
  m.set_timetick(TimeTick(tt));
  if (!lc.has_value() || *lc == offset) {
    m.set_last_confirmed_self();
  } else {
    m.set_last_confirmed(Id(*lc));
  }
  return std::make_shared<const ImmutableMessage>(Id(offset), std::move(m));
}

// A persisted TimeTick at `offset`.
inline ImmutableMessagePtr Tick(uint64_t offset, uint64_t tt, std::optional<uint64_t> lc = {}) {
  MutableMessage m = NewTimeTickMessage(TimeTick(tt));
  if (lc.has_value()) {
    m.set_last_confirmed(Id(*lc));
  } else {
    m.set_last_confirmed_self();
  }
  return std::make_shared<const ImmutableMessage>(Id(offset), std::move(m));
}

// A non-persisted TimeTick carrying the id of the last persisted message.
inline ImmutableMessagePtr NpTick(uint64_t last_persisted, uint64_t tt) {
  MutableMessage m = NewTimeTickMessage(TimeTick(tt));
  m.set_not_persisted();
  m.set_last_confirmed(Id(last_persisted));
  return std::make_shared<const ImmutableMessage>(Id(last_persisted), std::move(m));
}

// A manually advanced clock. Thread-safe.
class FakeClock {
 public:
  absl::Time Now() const {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ = absl::FromUnixSeconds(1'000'000);
};

// The persisted log a fake catch-up scanner reads. Thread-safe.
class FakeLog {
 public:
  void Add(ImmutableMessagePtr m) {
    absl::MutexLock lock(&mu_);
    entries_.push_back(std::move(m));
  }
  std::vector<ImmutableMessagePtr> Snapshot() const {
    absl::MutexLock lock(&mu_);
    return entries_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<ImmutableMessagePtr> entries_;
};

// Reads `log` from the first entry with id >= start, dropping other vchannels like the real
// catch-up scanner; at the end of the log returns DEADLINE_EXCEEDED (it never waits). Returns
// copies, as decoding from the backend does, so tests can tell catch-up output from the
// buffer's shared objects by pointer.
class FakeCatchupScanner final : public Scanner {
 public:
  FakeCatchupScanner(const FakeLog* log, MessageId start, std::string vchannel)
      : log_(log), start_(start), vchannel_(std::move(vchannel)) {}

  absl::StatusOr<ImmutableMessagePtr> Next(const trace::Context&, absl::Time) override {
    std::vector<ImmutableMessagePtr> entries = log_->Snapshot();
    while (pos_ < entries.size()) {
      const ImmutableMessagePtr& m = entries[pos_++];
      if (m->id() < start_) continue;
      std::string_view vc = m->vchannel();
      if (!vchannel_.empty() && !vc.empty() && vc != vchannel_) continue;
      return std::make_shared<const ImmutableMessage>(*m);
    }
    return absl::DeadlineExceededError("fake catch-up: end of log");
  }

 private:
  const FakeLog* log_;
  const MessageId start_;
  const std::string vchannel_;
  size_t pos_ = 0;
};

}  // namespace kf::wal::testing
