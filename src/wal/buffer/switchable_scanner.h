// SwitchableScanner: a Scanner that reads the backend (catch-up) until its next position is
// in the write-ahead buffer, then tails the buffer, and falls back to catch-up when the buffer
// evicts its next position (docs/semantics.md §3 "Write-ahead buffer").
//
// Fallback restarts catch-up at the last consumed message's LCMID (ImmutableMessage::
// last_confirmed(); the message's own id when it has none) and skips what was already
// delivered: persisted messages with id <= the last delivered id (or before the start, as the
// LCMID may be) and TimeTicks with a timetick <= the last delivered timetick. So the output has no
// gap and no duplicate across any number of switches.
//
// Tracing (docs/tracing.md §5): the catch-up scanner opens `wal.catchup_consume` itself; tailing
// returns the buffer's shared message untouched (no span, no mutation).
//
// Thread-safety: none (one reader), like every Scanner. Ownership: shares the buffer; owns
// the current catch-up scanner. Errors: Next returns the catch-up scanner's errors and the
// buffer's (DEADLINE_EXCEEDED leaves the scanner usable; the buffer's close error once it
// closed); a failing catch-up factory's error is returned and retried on the next call.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "wal/buffer/write_ahead_buffer.h"
#include "wal/wal.h"

namespace kf::wal {

// Opens a catch-up Scanner (e.g. NewCatchupScanner over a backend reader) at the first
// message with id >= `start_inclusive`. The scanner it returns must filter `vchannel` itself.
using CatchupScannerFactory =
    std::function<absl::StatusOr<std::unique_ptr<Scanner>>(const MessageId& start_inclusive)>;

struct SwitchableScannerOptions {
  std::shared_ptr<WriteAheadBuffer> buffer;  // required
  CatchupScannerFactory open_catchup;        // required
  // Empty: the whole pchannel. Otherwise tailing drops other vchannels' messages
  // (pchannel-level ones pass), as the catch-up scanner does.
  std::string vchannel;
  // The first message delivered is the first with id >= start, or > start if start_after.
  // Resolve DeliverPolicy kAll / kLatest to an id before (kAll: MessageId() reads from the
  // beginning, if the factory says so).
  MessageId start;
  bool start_after = false;
};

enum class ScanMode { kCatchup, kTailing };

class SwitchableScanner final : public Scanner {
 public:
  explicit SwitchableScanner(SwitchableScannerOptions options);

  absl::StatusOr<ImmutableMessagePtr> Next(const trace::Context& ctx, absl::Time deadline) override;
  bool tailing() const override { return tailing_ != nullptr; }
  bool NotifyWhenReadable(absl::AnyInvocable<void() &&> wake) override;

  // The mode the next Next starts in (kCatchup until the first successful switch).
  ScanMode mode() const { return tailing_ != nullptr ? ScanMode::kTailing : ScanMode::kCatchup; }
  // How many catch-up scanners were opened and how many times tailing began (tests, metrics).
  int catchup_opens() const { return catchup_opens_; }
  int tailing_switches() const { return tailing_switches_; }

 private:
  bool TrySwitchToTailing();
  void FallBackToCatchup();
  // Consumed = seen in the stream (delivered or filtered); moves the resume position.
  void Consumed(const ImmutableMessage& m);
  bool AlreadyDelivered(const ImmutableMessage& m) const;
  void Delivered(const ImmutableMessage& m);
  bool Wanted(const ImmutableMessage& m) const;

  const SwitchableScannerOptions options_;
  std::unique_ptr<Scanner> catchup_;
  std::unique_ptr<TailingReader> tailing_;
  // Where the stream resumes: after `resume_id_` (exclusive) once anything was consumed or the
  // start was exclusive, otherwise from it.
  MessageId resume_id_;
  bool resume_after_;
  // Where a fallback reopens catch-up (LCMID of the last consumed message).
  MessageId restart_id_;
  std::optional<MessageId> last_delivered_id_;  // persisted messages only
  std::optional<TimeTick> last_delivered_timetick_;
  int catchup_opens_ = 0;
  int tailing_switches_ = 0;
};

}  // namespace kf::wal
