#include "wal/buffer/write_ahead_buffer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace kf::wal {
namespace {

constexpr std::string_view kEvicted = "write-ahead buffer: evicted";

bool IsNonPersistedTick(const ImmutableMessage& m) {
  return m.type() == MessageType::kTimeTick && m.message().not_persisted();
}

absl::Status ShutdownError() {
  return StreamingError(StreamingCode::kOnShutdown, "write-ahead buffer closed");
}

}  // namespace

bool IsEvictedError(const absl::Status& status) {
  return status.code() == absl::StatusCode::kOutOfRange && status.message() == ToAbsl(kEvicted);
}

std::shared_ptr<WriteAheadBuffer> WriteAheadBuffer::Create(WriteAheadBufferOptions options) {
  // The constructor is private so every buffer is shared-owned (readers keep it alive).
  return std::shared_ptr<WriteAheadBuffer>(new WriteAheadBuffer(std::move(options)));
}

WriteAheadBuffer::WriteAheadBuffer(WriteAheadBufferOptions options)
    : options_(std::move(options)),
      horizon_(options_.starts_after),
      last_id_(options_.starts_after) {}

absl::Time WriteAheadBuffer::Now() const { return options_.clock ? options_.clock() : absl::Now(); }

absl::Status WriteAheadBuffer::Append(ImmutableMessagePtr msg) {
  if (msg == nullptr) return absl::InvalidArgumentError("write-ahead buffer: null message");
  const bool np = IsNonPersistedTick(*msg);
  // Sized outside the lock: EncodedSize walks the properties.
  const size_t bytes = msg->message().EncodedSize();
  const absl::Time now = Now();
  std::vector<absl::AnyInvocable<void() &&>> wakes;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(AppendLocked(std::move(msg), np, bytes, now));
    wakes = TakeWakesLocked();
  }
  RunWakes(std::move(wakes));
  return absl::OkStatus();
}

absl::Status WriteAheadBuffer::AppendLocked(ImmutableMessagePtr msg, bool np, size_t bytes,
                                            absl::Time now) {
  if (closed_) return ClosedErrorLocked();
  if (last_id_.has_value()) {
    const bool in_order =
        np ? msg->id() >= *last_id_ && msg->timetick() > last_timetick_ : msg->id() > *last_id_;
    if (!in_order) {
      return absl::FailedPreconditionError(
          absl::StrCat("write-ahead buffer: append out of WAL order: ", msg->id().ToText(),
                       np ? " (non-persisted tick)" : "", " after ", last_id_->ToText()));
    }
  } else if (np) {
    // A tick carries the id of the last persisted message: everything after it will follow.
    horizon_ = msg->id();
  }
  last_id_ = msg->id();
  last_timetick_ = msg->timetick();
  bytes_ += bytes;
  entries_.push_back(Entry{std::move(msg), np, bytes, now});
  EvictLocked(now);
  appended_.SignalAll();
  return absl::OkStatus();
}

std::vector<absl::AnyInvocable<void() &&>> WriteAheadBuffer::TakeWakesLocked() {
  std::vector<absl::AnyInvocable<void() &&>> wakes;
  wakes.reserve(waiting_.size());
  for (TailingReader* r : waiting_) {
    wakes.push_back(std::move(r->wake_));
    r->wake_ = nullptr;  // a moved-from AnyInvocable is not guaranteed empty
  }
  waiting_.clear();
  return wakes;
}

void WriteAheadBuffer::RunWakes(std::vector<absl::AnyInvocable<void() &&>> wakes) {
  for (auto& wake : wakes) std::move(wake)();
}

void WriteAheadBuffer::EvictExpired() {
  const absl::Time now = Now();
  absl::MutexLock lock(&mu_);
  EvictLocked(now);
}

void WriteAheadBuffer::Skip(const MessageId& id, TimeTick tt) {
  std::vector<absl::AnyInvocable<void() &&>> wakes;
  {
    absl::MutexLock lock(&mu_);
    while (!entries_.empty()) PopFrontLocked();
    // A phantom evicted entry: a reader waiting at the end would otherwise resume after the
    // gap.
    ++head_seq_;
    horizon_ = id;
    last_id_ = id;
    last_timetick_ = std::max(last_timetick_, tt);
    appended_.SignalAll();
    wakes = TakeWakesLocked();
  }
  RunWakes(std::move(wakes));
}

void WriteAheadBuffer::EvictLocked(absl::Time now) {
  while (!entries_.empty() && (bytes_ > options_.capacity_bytes ||
                               entries_.front().appended + options_.keepalive <= now)) {
    PopFrontLocked();
  }
  if (bytes_ <= options_.passed_bytes) return;  // no need to look at the readers
  // The first entry some open reader has still to return (a reader already behind the head
  // gets OUT_OF_RANGE whatever happens now).
  uint64_t needed = head_seq_ + entries_.size();
  for (const TailingReader* r : readers_) {
    if (r->seq_ >= head_seq_) needed = std::min(needed, r->seq_);
  }
  while (!entries_.empty() && head_seq_ < needed && bytes_ > options_.passed_bytes) {
    PopFrontLocked();
  }
}

void WriteAheadBuffer::PopFrontLocked() {
  Entry& front = entries_.front();
  horizon_ = front.msg->id();  // ids never decrease, so neither does the horizon
  bytes_ -= front.bytes;
  entries_.pop_front();
  ++head_seq_;
}

bool WriteAheadBuffer::CoversLocked(const MessageId& id, bool inclusive) const {
  // Before any eviction the retained run starts at the first appended (persisted) message.
  const std::optional<MessageId> floor = horizon_.has_value() ? horizon_
                                         : entries_.empty()
                                             ? std::nullopt
                                             : std::optional<MessageId>(entries_.front().msg->id());
  if (!floor.has_value()) return false;
  // An invalid horizon: the log was empty when the buffer was created, so it holds everything.
  if (!floor->valid()) return true;
  if (horizon_.has_value()) return inclusive ? id > *floor : id >= *floor;
  return id >= *floor;
}

absl::StatusOr<std::unique_ptr<TailingReader>> WriteAheadBuffer::ReadFrom(const MessageId& id) {
  return OpenReader(id, /*inclusive=*/true);
}

absl::StatusOr<std::unique_ptr<TailingReader>> WriteAheadBuffer::ReadAfter(const MessageId& id) {
  return OpenReader(id, /*inclusive=*/false);
}

absl::StatusOr<std::unique_ptr<TailingReader>> WriteAheadBuffer::OpenReader(const MessageId& id,
                                                                            bool inclusive) {
  absl::MutexLock lock(&mu_);
  if (closed_) return ClosedErrorLocked();
  if (!CoversLocked(id, inclusive)) {
    return absl::NotFoundError(absl::StrCat("write-ahead buffer does not hold ",
                                            inclusive ? "from " : "after ", id.ToText()));
  }
  // Entries sort by (id, np): a non-persisted tick follows the persisted message whose id it
  // carries. Inclusive starts at (id, persisted); exclusive at (id, np).
  const bool start_np = !inclusive;
  auto it = std::lower_bound(entries_.begin(), entries_.end(), std::pair(id, start_np),
                             [](const Entry& e, const std::pair<MessageId, bool>& key) {
                               return std::pair(e.msg->id(), e.np) < key;
                             });
  const uint64_t seq = head_seq_ + static_cast<uint64_t>(it - entries_.begin());
  auto reader =
      std::unique_ptr<TailingReader>(new TailingReader(shared_from_this(), seq, id, start_np));
  readers_.push_back(reader.get());
  return reader;
}

TailingReader::~TailingReader() {
  absl::MutexLock lock(&buffer_->mu_);
  std::erase(buffer_->readers_, this);
  if (wake_ == nullptr) return;
  std::erase(buffer_->waiting_, this);
}

absl::StatusOr<ImmutableMessagePtr> TailingReader::Next(absl::Time deadline) {
  return buffer_->NextFor(this, deadline);
}

bool TailingReader::NotifyWhenReadable(absl::AnyInvocable<void() &&> wake) {
  absl::MutexLock lock(&buffer_->mu_);
  if (buffer_->ReadableLocked(*this)) return false;
  if (wake_ == nullptr) buffer_->waiting_.push_back(this);
  wake_ = std::move(wake);
  return true;
}

bool WriteAheadBuffer::ReadableLocked(const TailingReader& reader) const {
  // Below the end: an entry to return, or (below the head) an eviction to report.
  return closed_ || reader.seq_ < head_seq_ + entries_.size();
}

absl::StatusOr<ImmutableMessagePtr> WriteAheadBuffer::NextFor(TailingReader* reader,
                                                              absl::Time deadline) {
  // Shared: an Append wakes every waiting reader at once. Exclusive, they would take the lock
  // one after the other, each woken by the previous one's unlock, and the last of 16 tailing
  // consumers would wait 16 thread wake-ups for its message.
  absl::ReaderMutexLock lock(&mu_);
  bool timed_out = false;
  for (;;) {
    if (reader->seq_ < head_seq_) return absl::OutOfRangeError(ToAbsl(kEvicted));
    const uint64_t end = head_seq_ + entries_.size();
    while (reader->seq_ < end) {
      const Entry& e = entries_[reader->seq_ - head_seq_];
      ++reader->seq_;
      // Only entries appended after the reader opened beyond the tail can sort below its start.
      if (std::pair(e.msg->id(), e.np) < std::pair(reader->start_id_, reader->start_np_)) {
        continue;
      }
      return e.msg;
    }
    if (closed_) return ClosedErrorLocked();
    // One more pass after a timeout so an Append racing the deadline is not lost. A deadline
    // already passed (a pump polling) must not reach the CondVar: it would still make a futex
    // call, which costs a VM more than everything else here.
    if (timed_out || deadline <= absl::Now()) {
      return absl::DeadlineExceededError("write-ahead buffer: no message before the deadline");
    }
    timed_out = appended_.WaitWithDeadline(&mu_, deadline);
  }
}

void WriteAheadBuffer::Close(absl::Status why) {
  std::vector<absl::AnyInvocable<void() &&>> wakes;
  {
    absl::MutexLock lock(&mu_);
    if (!closed_) close_error_ = std::move(why);
    closed_ = true;
    appended_.SignalAll();
    wakes = TakeWakesLocked();
  }
  RunWakes(std::move(wakes));
}

absl::Status WriteAheadBuffer::ClosedErrorLocked() const {
  return close_error_.ok() ? ShutdownError() : close_error_;
}

size_t WriteAheadBuffer::size_bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

size_t WriteAheadBuffer::num_entries() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

std::optional<MessageId> WriteAheadBuffer::horizon() const {
  absl::MutexLock lock(&mu_);
  return horizon_;
}

}  // namespace kf::wal
