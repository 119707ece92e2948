#include "wal/backends/quorum/quorum_backend.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/backoff.h"
#include "common/errors.h"
#include "common/metrics/histogram.h"
#include "common/status_macros.h"
#include "format/segment_object.h"
#include "wal/backends/quorum/ensemble.h"
#include "wal/backends/quorum/quorum_scanner.h"

namespace kf::wal::quorum {

QuorumBackend::QuorumBackend(const QuorumOpenerOptions& options, LogStorePool* pool,
                             std::string pchannel, Term term, std::unique_ptr<QuorumMeta> meta,
                             std::shared_ptr<LogView> view)
    : options_(options),
      pool_(pool),
      pchannel_(std::move(pchannel)),
      term_(term),
      read_only_(true),
      epoch_(0),
      meta_(std::move(meta)),
      view_(std::move(view)) {}

QuorumBackend::QuorumBackend(const QuorumOpenerOptions& options, LogStorePool* pool,
                             std::string pchannel, Term term, std::unique_ptr<QuorumMeta> meta,
                             std::shared_ptr<LogView> view, WriterInit init)
    : options_(options),
      pool_(pool),
      pchannel_(std::move(pchannel)),
      term_(term),
      read_only_(false),
      epoch_(init.epoch),
      flush_duration_(init.flush_duration),
      meta_(std::move(meta)),
      view_(std::move(view)) {
  auto seg = std::make_unique<Segment>();
  seg->id = init.segment;
  seg->record = std::move(init.record);
  seg->opened = absl::Now();
  {
    absl::MutexLock l(&mu_);
    StartSenders(seg.get());
    PublishLocked(*seg);
    segments_.push_back(std::move(seg));
  }
  acker_ = std::jthread([this] {
    pthread_setname_np(pthread_self(), "kf-qwal-ack");
    AckerLoop();
  });
}

QuorumBackend::~QuorumBackend() { (void)Close(); }

void QuorumBackend::StartSenders(Segment* seg) {
  const size_t n = static_cast<size_t>(seg->record.meta.ensemble_size());
  seg->replica_end.assign(n, 0);
  seg->replica_error.assign(n, "");
  seg->senders_running = static_cast<int>(n);
  for (size_t i = 0; i < n; ++i) {
    seg->senders.emplace_back([this, seg, i] {
      pthread_setname_np(pthread_self(), "kf-qwal-send");
      SenderLoop(seg, i);
    });
  }
}

void QuorumBackend::PublishLocked(const Segment& seg) {
  if (seg.record.mod_revision == 0) return;  // not created yet: nothing readable
  ViewSegment v;
  v.ensemble.assign(seg.record.meta.ensemble().begin(), seg.record.meta.ensemble().end());
  v.sealed = seg.sealed;
  v.end = seg.acked;
  v.bytes = seg.acked_bytes;
  absl::MutexLock l(&view_->mu);
  view_->segments[seg.id] = std::move(v);
  view_->cv.SignalAll();
}

void QuorumBackend::Fail(absl::Status s) {
  if (error_.ok()) error_ = std::move(s);
  ack_cv_.Signal();
  work_cv_.SignalAll();
}

uint64_t QuorumBackend::QuorumEnd(const Segment& seg) {
  if (seg.replica_end.size() < 2) return 0;
  std::vector<uint64_t> ends = seg.replica_end;
  std::sort(ends.begin(), ends.end(), std::greater<>());
  return std::min(ends[1], seg.appended);
}

absl::StatusOr<MessageId> QuorumBackend::Append(std::string data, AppendCallback done) {
  if (read_only_) return absl::FailedPreconditionError("quorum WAL: backend is read-only");
  absl::MutexLock l(&mu_);
  if (closing_) return absl::CancelledError("quorum WAL: backend closed");
  if (!error_.ok()) {
    if (IsFenced(error_)) return error_;
    return absl::FailedPreconditionError(
        absl::StrCat("quorum WAL ", pchannel_, ": earlier write error: ", error_.ToString()));
  }
  if (data.size() > options_.max_entry_bytes) {
    return StreamingError(StreamingCode::kInvalidArgument,
                          absl::StrCat("entry of ", data.size(), " bytes exceeds the limit of ",
                                       options_.max_entry_bytes));
  }
  if (queued_bytes_ > 0 && queued_bytes_ + data.size() > options_.max_queue_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("quorum WAL ", pchannel_, ": append queue full (", queued_bytes_, " bytes)"));
  }
  Segment* seg = segments_.back().get();
  const absl::Time now = absl::Now();
  const MessageId id(WalKind::kQuorum, seg->id, seg->appended++);
  const uint64_t bytes = data.size();
  seg->bytes += bytes;
  queued_bytes_ += bytes;
  seg->data.push_back(std::make_shared<const std::string>(std::move(data)));
  seg->waiters.push_back(Waiter{std::move(done), now, bytes});
  // The roll comes after the entry, never before it: so NextId() tells the id Append gives.
  if (seg->bytes >= options_.segment_bytes || now - seg->opened >= options_.segment_age) {
    seg->rolled = true;
    auto next = std::make_unique<Segment>();
    next->id = seg->id + 1;
    next->opened = now;
    segments_.push_back(std::move(next));
    ack_cv_.Signal();
  }
  work_cv_.SignalAll();
  return id;
}

void QuorumBackend::SenderLoop(Segment* seg, size_t member) {
  const std::string address = seg->record.meta.ensemble(static_cast<int>(member));
  auto client = pool_->Get(address);
  Backoff backoff(absl::Milliseconds(10), absl::Seconds(1));
  absl::Time give_up = absl::InfiniteFuture();
  for (;;) {
    kingfisher::v1::AddEntriesRequest req;
    std::vector<std::shared_ptr<const std::string>> batch;
    bool seal = false;
    uint64_t seal_end = 0;
    {
      absl::MutexLock l(&mu_);
      while (!stopping_ && error_.ok() && !seg->sealed &&
             seg->replica_end[member] >= seg->appended) {
        work_cv_.Wait(&mu_);
      }
      if (stopping_ || !error_.ok()) break;
      if (seg->sealed && give_up == absl::InfiniteFuture())
        give_up = absl::Now() + options_.ack_timeout;
      const uint64_t from = seg->replica_end[member];
      if (seg->sealed && (from >= seg->appended || absl::Now() >= give_up)) {
        seal = true;
        seal_end = seg->appended;
      } else if (from < seg->base) {
        // The logstore lost entries every other member acknowledged and we no longer hold:
        // it stays out of this segment's quorum.
        seg->replica_error[member] = "lost entries below " + std::to_string(seg->base);
        break;
      } else {
        uint64_t size = 0;
        for (uint64_t k = from - seg->base; k < seg->data.size(); ++k) {
          if (!batch.empty() && size + seg->data[k]->size() > options_.max_batch_bytes) break;
          size += seg->data[k]->size();
          batch.push_back(seg->data[k]);
        }
        req.set_first_entry(from);
      }
    }
    if (seal) {
      kingfisher::v1::SealRequest sr;
      sr.set_log(pchannel_);
      sr.set_segment(seg->id);
      sr.set_epoch(epoch_);
      sr.set_end(seal_end);
      (void)client->Seal(sr, absl::Now() + options_.rpc_timeout);  // best effort: for upload
      break;
    }
    if (options_.before_send) options_.before_send(address);
    req.set_log(pchannel_);
    req.set_segment(seg->id);
    req.set_epoch(epoch_);
    for (const auto& d : batch) req.add_entries(*d);
    const auto start = std::chrono::steady_clock::now();
    auto r = client->AddEntries(req, absl::Now() + options_.rpc_timeout);
    if (r.ok()) metrics::ObserveSecondsSince(flush_duration_, start);
    std::optional<uint64_t> behind;  // the logstore's end when it is behind what we assumed
    if (absl::IsOutOfRange(r.status())) {
      kingfisher::v1::ReadEntriesRequest probe;
      probe.set_log(pchannel_);
      probe.set_segment(seg->id);
      auto p = client->ReadEntries(probe, absl::Now() + options_.rpc_timeout);
      if (p.ok()) behind = p->durable_end();
      if (absl::IsNotFound(p.status())) behind = 0;
    }
    absl::MutexLock l(&mu_);
    if (r.ok()) {
      backoff.Reset();
      seg->replica_error[member].clear();
      if (r->durable_end() > seg->replica_end[member]) {
        seg->replica_end[member] = r->durable_end();
        const uint64_t all = *std::min_element(seg->replica_end.begin(), seg->replica_end.end());
        while (seg->base < all && !seg->data.empty()) {
          seg->data.pop_front();
          ++seg->base;
        }
        ack_cv_.Signal();
      }
      continue;
    }
    if (IsFenced(r.status())) {
      Fail(
          WithContext(r.status(), absl::StrCat("quorum WAL ", pchannel_, " term ", term_.value())));
      break;
    }
    seg->replica_error[member] = std::string(r.status().message());
    if (behind.has_value()) {
      seg->replica_end[member] = *behind;
      continue;
    }
    work_cv_.WaitWithTimeout(&mu_, backoff.Next());
  }
  absl::MutexLock l(&mu_);
  --seg->senders_running;
}

absl::Status QuorumBackend::CheckOwner(absl::Time give_up) {
  return RetryWithBackoff(
      give_up, [](const absl::Status& s) { return !IsFenced(s); },
      [&] { return meta_->CheckOwner(std::min(give_up, absl::Now() + options_.rpc_timeout)); });
}

void QuorumBackend::AckerLoop() {
  for (;;) {
    std::deque<Waiter> ready;
    absl::Status status;
    Segment* roll_front = nullptr;
    Segment* roll_next = nullptr;
    {
      absl::MutexLock l(&mu_);
      for (;;) {
        if (stopping_) return;
        if (!error_.ok()) {
          for (auto& s : segments_) {
            for (auto& w : s->waiters) {
              queued_bytes_ -= w.bytes;
              ready.push_back(std::move(w));
            }
            s->waiters.clear();
          }
          if (!ready.empty()) {
            status = error_;
            break;
          }
        }
        Segment* front = segments_.front().get();
        const uint64_t q = QuorumEnd(*front);
        if (error_.ok() && q > front->acked) {
          for (; front->acked < q; ++front->acked) {
            Waiter& w = front->waiters.front();
            front->acked_bytes += w.bytes;
            queued_bytes_ -= w.bytes;
            ready.push_back(std::move(w));
            front->waiters.pop_front();
          }
          PublishLocked(*front);
          break;
        }
        absl::Time oldest = absl::InfiniteFuture();
        for (const auto& s : segments_) {
          if (!s->waiters.empty()) oldest = std::min(oldest, s->waiters.front().enqueued);
        }
        if (error_.ok() && oldest + options_.ack_timeout <= absl::Now()) {
          std::vector<std::string> members;
          for (size_t i = 0; i < front->replica_end.size(); ++i) {
            members.push_back(
                absl::StrCat(front->record.meta.ensemble(static_cast<int>(i)), " durable end ",
                             front->replica_end[i], front->replica_error[i].empty() ? "" : " (",
                             front->replica_error[i], front->replica_error[i].empty() ? "" : ")"));
          }
          Fail(absl::UnavailableError(absl::StrCat(
              "quorum WAL ", pchannel_, ": entry ", front->id, ".", front->acked,
              " not durable on 2 of ", front->replica_end.size(), " logstores within ",
              absl::FormatDuration(options_.ack_timeout), ": ", absl::StrJoin(members, "; "))));
          continue;
        }
        if (error_.ok() && front->rolled && front->acked == front->appended &&
            segments_.size() > 1) {
          roll_front = front;
          roll_next = segments_[1].get();
          break;
        }
        ack_cv_.WaitWithDeadline(&mu_, oldest + options_.ack_timeout);
      }
    }
    if (!ready.empty()) {
      // The replicas' answers may be old (this process was paused): acknowledge only while no
      // newer writer opened the log. Its recovery kept these entries, so failing is safe.
      if (status.ok() && options_.before_ack) options_.before_ack();
      if (status.ok()) {
        const absl::Time give_up = absl::Now() + options_.ack_timeout;
        status = CheckOwner(give_up);
        if (!status.ok()) {
          absl::MutexLock l(&mu_);
          Fail(status);
        }
      }
      for (auto& w : ready) {
        if (w.done) std::move(w.done)(status);
      }
      continue;
    }
    absl::Status s = Roll(roll_front, roll_next);
    {
      absl::MutexLock l(&mu_);
      if (s.ok()) {
        roll_front->sealed = true;
        roll_front->acked = roll_front->appended;
        PublishLocked(*roll_front);
        retired_.push_back(std::move(segments_.front()));
        segments_.pop_front();
        roll_next->opened = std::max(roll_next->opened, absl::Now());
        StartSenders(roll_next);
        PublishLocked(*roll_next);
        work_cv_.SignalAll();
      } else if (IsFenced(s)) {
        Fail(s);
      } else {
        // Transient (metadata store, no logstores): the ack timeout bounds the retries.
        ack_cv_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
      }
    }
    ReapRetired(false);
  }
}

absl::Status QuorumBackend::Roll(Segment* front, Segment* next) {
  ASSIGN_OR_RETURN(auto ensemble, ChooseEnsemble(options_, pool_, next->id));
  SegmentRecord sealed;
  SegmentRecord created;
  {
    absl::MutexLock l(&mu_);
    sealed = front->record;
    sealed.meta.set_sealed(true);
    sealed.meta.set_end(front->appended);
    sealed.meta.set_bytes(front->bytes);
  }
  for (auto& a : ensemble) created.meta.add_ensemble(std::move(a));
  created.meta.set_epoch(epoch_);
  ASSIGN_OR_RETURN(int64_t rev, meta_->Update({{front->id, sealed}, {next->id, created}}, {},
                                              absl::Now() + options_.rpc_timeout));
  sealed.mod_revision = rev;
  created.mod_revision = rev;
  absl::MutexLock l(&mu_);
  front->record = std::move(sealed);
  next->record = std::move(created);
  return absl::OkStatus();
}

void QuorumBackend::ReapRetired(bool all) {
  std::vector<std::unique_ptr<Segment>> done;
  {
    absl::MutexLock l(&mu_);
    for (auto it = retired_.begin(); it != retired_.end();) {
      if (all || (*it)->senders_running == 0) {
        done.push_back(std::move(*it));
        it = retired_.erase(it);
      } else {
        ++it;
      }
    }
  }
  done.clear();  // joins their (finished or stopping) senders without the lock
}

absl::StatusOr<std::unique_ptr<BackendScanner>> QuorumBackend::Read(const ReadOptions& options) {
  if (read_only_)
    RETURN_IF_ERROR(RefreshView(meta_.get(), pool_, options_.rpc_timeout, view_.get()));
  uint64_t segment = 0;
  uint64_t entry = 0;
  switch (options.start) {
    case ReadOptions::Start::kEarliest: {
      absl::MutexLock l(&view_->mu);
      if (!view_->segments.empty()) segment = view_->segments.begin()->first;
      break;
    }
    case ReadOptions::Start::kLatest: {
      const MessageId next = NextId();
      segment = next.segment();
      entry = next.entry();
      break;
    }
    case ReadOptions::Start::kFrom:
    case ReadOptions::Start::kAfter:
      if (options.id.kind() != WalKind::kQuorum) {
        return StreamingError(StreamingCode::kInvalidArgument,
                              "quorum WAL: message id is not a quorum id: " + options.id.ToText());
      }
      segment = options.id.segment();
      entry = options.id.entry() + (options.start == ReadOptions::Start::kAfter ? 1 : 0);
      break;
  }
  return std::unique_ptr<BackendScanner>(std::make_unique<QuorumScanner>(
      options_, pool_, meta_.get(), pchannel_, view_, segment, entry));
}

MessageId QuorumBackend::NextId() const {
  if (!read_only_) {
    absl::MutexLock l(&mu_);
    const Segment& seg = *segments_.back();
    return MessageId(WalKind::kQuorum, seg.id, seg.appended);
  }
  (void)RefreshView(meta_.get(), pool_, options_.rpc_timeout, view_.get());
  absl::MutexLock l(&view_->mu);
  if (view_->segments.empty()) return MessageId(WalKind::kQuorum, 0, 0);
  const auto& [id, seg] = *view_->segments.rbegin();
  return MessageId(WalKind::kQuorum, id, seg.end);
}

absl::StatusOr<MessageId> QuorumBackend::TailStart(uint64_t bytes) {
  if (read_only_)
    RETURN_IF_ERROR(RefreshView(meta_.get(), pool_, options_.rpc_timeout, view_.get()));
  // Segment granularity: the start of the newest segment from which the rest holds `bytes`.
  absl::MutexLock l(&view_->mu);
  if (view_->segments.empty()) return MessageId(WalKind::kQuorum, 0, 0);
  uint64_t covered = 0;
  for (auto it = view_->segments.rbegin(); it != view_->segments.rend(); ++it) {
    covered += it->second.bytes;
    if (covered >= bytes) return MessageId(WalKind::kQuorum, it->first, 0);
  }
  return MessageId(WalKind::kQuorum, view_->segments.begin()->first, 0);
}

absl::Status QuorumBackend::Truncate(const MessageId& id) {
  if (read_only_) return absl::FailedPreconditionError("quorum WAL: backend is read-only");
  if (id.kind() != WalKind::kQuorum) {
    return StreamingError(StreamingCode::kInvalidArgument,
                          "quorum WAL: message id is not a quorum id: " + id.ToText());
  }
  std::vector<uint64_t> victims;
  std::map<uint64_t, ViewSegment> removed;
  {
    absl::MutexLock l(&view_->mu);
    for (const auto& [seg, v] : view_->segments) {
      if (!v.sealed || seg == view_->segments.rbegin()->first) break;
      if (seg < id.segment() || (seg == id.segment() && v.end <= id.entry() + 1)) {
        victims.push_back(seg);
        removed.emplace(seg, v);
      }
    }
  }
  if (victims.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(meta_->Update({}, victims, absl::Now() + options_.rpc_timeout).status());
  {
    absl::MutexLock l(&view_->mu);
    for (uint64_t seg : victims) view_->segments.erase(seg);
    view_->truncated_end.emplace(removed.rbegin()->first, removed.rbegin()->second.end);
    view_->cv.SignalAll();
  }
  // Best effort: a logstore that misses this keeps an orphan file (docs/quorum-wal.md).
  for (const auto& [seg, v] : removed) {
    for (const auto& address : v.ensemble) {
      kingfisher::v1::DeleteSegmentRequest req;
      req.set_log(pchannel_);
      req.set_segment(seg);
      (void)pool_->Get(address)->DeleteSegment(req, absl::Now() + options_.rpc_timeout);
    }
    if (options_.object_store != nullptr) {
      (void)options_.object_store->Delete(
          format::SegmentObjectKey(options_.object_prefix, pchannel_, seg),
          absl::Now() + options_.rpc_timeout);
    }
  }
  return absl::OkStatus();
}

std::optional<uint64_t> QuorumBackend::StoredBytes() const {
  absl::MutexLock l(&view_->mu);
  uint64_t total = 0;
  for (const auto& [id, v] : view_->segments) total += v.bytes;
  return total;
}

absl::Status QuorumBackend::Close() {
  absl::MutexLock cl(&close_mu_);
  {
    absl::MutexLock l(&mu_);
    if (closed_) return absl::OkStatus();
    closing_ = true;
    if (!read_only_) {
      // Every queued append completes first (acknowledged, or failed by the ack timeout), and
      // sealed segments' senders finish their replica and send Seal (so it gets uploaded);
      // both are bounded by the ack timeout.
      mu_.Await(absl::Condition(
          +[](QuorumBackend* b) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            for (const auto& s : b->segments_) {
              if (!s->waiters.empty()) return false;
            }
            for (const auto& s : b->retired_) {
              if (s->senders_running > 0) return false;
            }
            return true;
          },
          this));
    }
    stopping_ = true;
    ack_cv_.SignalAll();
    work_cv_.SignalAll();
  }
  if (acker_.joinable()) acker_.join();
  std::deque<std::unique_ptr<Segment>> segments;
  {
    absl::MutexLock l(&mu_);
    segments.swap(segments_);
  }
  segments.clear();  // joins the senders
  ReapRetired(true);
  {
    absl::MutexLock l(&view_->mu);
    view_->closed = true;
    view_->cv.SignalAll();
  }
  absl::MutexLock l(&mu_);
  closed_ = true;
  return absl::OkStatus();
}

}  // namespace kf::wal::quorum
