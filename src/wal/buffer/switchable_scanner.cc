#include "wal/buffer/switchable_scanner.h"

#include <algorithm>
#include <utility>

#include "common/status_macros.h"

namespace kf::wal {
namespace {

bool IsNonPersistedTick(const ImmutableMessage& m) {
  return m.type() == MessageType::kTimeTick && m.message().not_persisted();
}

}  // namespace

SwitchableScanner::SwitchableScanner(SwitchableScannerOptions options)
    : options_(std::move(options)),
      resume_id_(options_.start),
      resume_after_(options_.start_after),
      restart_id_(options_.start) {
  // An exclusive start behaves as if `start` had been delivered: catch-up reopens at it and
  // skips it.
  if (options_.start_after) last_delivered_id_ = options_.start;
}

absl::StatusOr<ImmutableMessagePtr> SwitchableScanner::Next(const trace::Context& ctx,
                                                            absl::Time deadline) {
  for (;;) {
    if (tailing_ == nullptr) {
      // Checked before every catch-up read: the switch happens as soon as the buffer holds
      // the next position, and catch-up is opened only if it does not.
      if (TrySwitchToTailing()) continue;
      if (catchup_ == nullptr) {
        ASSIGN_OR_RETURN(catchup_, options_.open_catchup(restart_id_));
        ++catchup_opens_;
      }
      ASSIGN_OR_RETURN(ImmutableMessagePtr m, catchup_->Next(ctx, deadline));
      if (AlreadyDelivered(*m)) continue;  // re-read after a fallback from the LCMID
      Consumed(*m);
      Delivered(*m);
      return m;
    }
    absl::StatusOr<ImmutableMessagePtr> m = tailing_->Next(deadline);
    if (!m.ok()) {
      if (IsEvictedError(m.status())) {
        FallBackToCatchup();
        continue;
      }
      return m.status();
    }
    const ImmutableMessage& msg = **m;
    if (AlreadyDelivered(msg)) continue;
    Consumed(msg);
    if (!Wanted(msg)) continue;
    Delivered(msg);
    return m;
  }
}

bool SwitchableScanner::NotifyWhenReadable(absl::AnyInvocable<void() &&> wake) {
  return tailing_ != nullptr && tailing_->NotifyWhenReadable(std::move(wake));
}

bool SwitchableScanner::TrySwitchToTailing() {
  auto reader = resume_after_ ? options_.buffer->ReadAfter(resume_id_)
                              : options_.buffer->ReadFrom(resume_id_);
  // NOT_FOUND (not covered) or a closed buffer: keep reading the backend.
  if (!reader.ok()) return false;
  tailing_ = std::move(*reader);
  catchup_.reset();
  ++tailing_switches_;
  return true;
}

void SwitchableScanner::FallBackToCatchup() {
  tailing_.reset();
  // Opened lazily at restart_id_ by Next, unless the buffer covers the resume position again
  // (e.g. only a non-persisted tick was evicted).
  catchup_.reset();
}

void SwitchableScanner::Consumed(const ImmutableMessage& m) {
  resume_id_ = m.id();
  resume_after_ = true;
  // LCMID <= own id by construction; anything else (absent, undecodable) restarts at the
  // message itself, which is then skipped as delivered or consumed.
  const MessageId lc = m.last_confirmed();
  restart_id_ = lc.valid() && lc <= m.id() ? lc : m.id();
}

bool SwitchableScanner::AlreadyDelivered(const ImmutableMessage& m) const {
  // Timeticks strictly increase in WAL order, so a tick at or below a delivered timetick was
  // already passed (delivered itself, or a non-persisted tick superseded by it).
  if (m.type() == MessageType::kTimeTick && last_delivered_timetick_.has_value() &&
      m.timetick() <= *last_delivered_timetick_) {
    return true;
  }
  if (IsNonPersistedTick(m)) return false;  // carries the previous message's id
  // A fallback reopens catch-up at an LCMID, which may lie before an inclusive start (the
  // reader may not have delivered anything yet): what lies there was never this reader's.
  if (options_.start.valid() && m.id() < options_.start) return true;
  return last_delivered_id_.has_value() && m.id() <= *last_delivered_id_;
}

void SwitchableScanner::Delivered(const ImmutableMessage& m) {
  if (!IsNonPersistedTick(m)) last_delivered_id_ = m.id();
  last_delivered_timetick_ = last_delivered_timetick_.has_value()
                                 ? std::max(*last_delivered_timetick_, m.timetick())
                                 : m.timetick();
}

bool SwitchableScanner::Wanted(const ImmutableMessage& m) const {
  std::string_view vc = m.vchannel();
  return options_.vchannel.empty() || vc.empty() || vc == options_.vchannel;
}

}  // namespace kf::wal
