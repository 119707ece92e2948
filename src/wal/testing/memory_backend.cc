#include "wal/testing/memory_backend.h"

namespace kf::wal::testing {

struct MemoryWalBackend::Log {
  mutable absl::Mutex mu;
  std::vector<std::string> entries ABSL_GUARDED_BY(mu);    // index = offset
  size_t durable ABSL_GUARDED_BY(mu) = 0;                  // entries[0, durable) are durable
  std::deque<AppendCallback> pending ABSL_GUARDED_BY(mu);  // callbacks of entries >= durable
  std::vector<std::string> attempts ABSL_GUARDED_BY(mu);
  int fail_next ABSL_GUARDED_BY(mu) = 0;
  absl::Status fail_status ABSL_GUARDED_BY(mu);
  bool closed ABSL_GUARDED_BY(mu) = false;
};

namespace {
class MemoryScanner final : public BackendScanner {
 public:
  MemoryScanner(std::shared_ptr<void> keep, absl::Mutex* mu, const std::vector<std::string>* e,
                const size_t* durable, const bool* closed, size_t next)
      : keep_(std::move(keep)),
        mu_(mu),
        entries_(e),
        durable_(durable),
        closed_(closed),
        next_(next) {}
  absl::StatusOr<Entry> Next(absl::Time deadline) override {
    absl::MutexLock lock(mu_);
    auto ready = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return next_ < *durable_ || *closed_; };
    if (!mu_->AwaitWithDeadline(absl::Condition(&ready), deadline)) {
      return absl::DeadlineExceededError("no new entry");
    }
    if (next_ >= *durable_) return absl::CancelledError("backend closed");
    Entry e{MessageId::Local(next_), (*entries_)[next_]};
    ++next_;
    return e;
  }

 private:
  std::shared_ptr<void> keep_;
  absl::Mutex* mu_;
  const std::vector<std::string>* entries_;
  const size_t* durable_;
  const bool* closed_;
  size_t next_;
};
}  // namespace

MemoryWalBackend::MemoryWalBackend(std::string pchannel, Term term, bool auto_durable)
    : MemoryWalBackend(std::move(pchannel), term, auto_durable, std::make_shared<Log>()) {}

MemoryWalBackend::MemoryWalBackend(std::string pchannel, Term term, bool auto_durable,
                                   std::shared_ptr<Log> log)
    : pchannel_(std::move(pchannel)),
      term_(term),
      auto_durable_(auto_durable),
      log_(std::move(log)) {}

absl::StatusOr<MessageId> MemoryWalBackend::Append(std::string data, AppendCallback done) {
  MessageId id;
  {
    absl::MutexLock lock(&log_->mu);
    log_->attempts.push_back(data);
    if (log_->closed) return absl::CancelledError("closed");
    if (log_->fail_next > 0) {
      --log_->fail_next;
      return log_->fail_status;
    }
    id = MessageId::Local(log_->entries.size());
    log_->entries.push_back(std::move(data));
    if (!auto_durable_) {
      log_->pending.push_back(std::move(done));
      return id;
    }
    log_->durable = log_->entries.size();
  }
  std::move(done)(absl::OkStatus());
  return id;
}

absl::StatusOr<std::unique_ptr<BackendScanner>> MemoryWalBackend::Read(const ReadOptions& o) {
  absl::MutexLock lock(&log_->mu);
  size_t next = 0;
  switch (o.start) {
    case ReadOptions::Start::kEarliest:
      next = 0;
      break;
    case ReadOptions::Start::kLatest:
      next = log_->entries.size();
      break;
    case ReadOptions::Start::kFrom:
      next = o.id.entry();
      break;
    case ReadOptions::Start::kAfter:
      next = o.id.entry() + 1;
      break;
  }
  return std::make_unique<MemoryScanner>(log_, &log_->mu, &log_->entries, &log_->durable,
                                         &log_->closed, next);
}

MessageId MemoryWalBackend::NextId() const {
  absl::MutexLock lock(&log_->mu);
  return MessageId::Local(log_->entries.size());
}

absl::StatusOr<MessageId> MemoryWalBackend::TailStart(uint64_t) { return MessageId::Local(0); }

absl::Status MemoryWalBackend::Truncate(const MessageId&) { return absl::OkStatus(); }

absl::Status MemoryWalBackend::Close() {
  std::deque<AppendCallback> pending;
  {
    absl::MutexLock lock(&log_->mu);
    log_->closed = true;
    pending.swap(log_->pending);
    log_->entries.resize(log_->durable);
  }
  for (auto& cb : pending) std::move(cb)(absl::CancelledError("closed before durable"));
  return absl::OkStatus();
}

void MemoryWalBackend::FailNextAppends(int n, absl::Status status) {
  absl::MutexLock lock(&log_->mu);
  log_->fail_next = n;
  log_->fail_status = std::move(status);
}

void MemoryWalBackend::MakeDurable(size_t n) {
  std::vector<AppendCallback> run;
  {
    absl::MutexLock lock(&log_->mu);
    for (size_t i = 0; i < n && !log_->pending.empty(); ++i) {
      run.push_back(std::move(log_->pending.front()));
      log_->pending.pop_front();
      ++log_->durable;
    }
  }
  for (auto& cb : run) std::move(cb)(absl::OkStatus());
}

void MemoryWalBackend::FailPending(absl::Status status) {
  std::deque<AppendCallback> pending;
  {
    absl::MutexLock lock(&log_->mu);
    pending.swap(log_->pending);
  }
  for (auto& cb : pending) std::move(cb)(status);
}

std::vector<std::string> MemoryWalBackend::Attempts() const {
  absl::MutexLock lock(&log_->mu);
  return log_->attempts;
}

std::vector<std::string> MemoryWalBackend::DurableEntries() const {
  absl::MutexLock lock(&log_->mu);
  return {log_->entries.begin(), log_->entries.begin() + log_->durable};
}

std::unique_ptr<MemoryWalBackend> MemoryWalBackend::Reopen(Term term) const {
  {
    absl::MutexLock lock(&log_->mu);
    log_->closed = false;
    log_->entries.resize(log_->durable);  // a crash loses what was never durable
  }
  return std::unique_ptr<MemoryWalBackend>(
      new MemoryWalBackend(pchannel_, term, auto_durable_, log_));
}

}  // namespace kf::wal::testing
