#include "streaming/assignment_view.h"

#include <algorithm>
#include <utility>

#include "spdlog/spdlog.h"

namespace kf::streaming {

kingfisher::v1::AssignmentSnapshot AssignmentSnapshot::ToProto() const {
  kingfisher::v1::AssignmentSnapshot out;
  out.set_version(version);
  for (const auto& [name, p] : pchannels) *out.add_pchannels() = p.assignment;
  for (const auto& [id, n] : nodes) *out.add_nodes() = n.info;
  return out;
}

absl::StatusOr<std::unique_ptr<AssignmentView>> AssignmentView::Start(meta::MetaStore* store,
                                                                      ClusterKeys keys,
                                                                      Options options,
                                                                      absl::Time deadline) {
  std::unique_ptr<AssignmentView> view(new AssignmentView(store, std::move(keys), options));
  if (absl::Status s = view->ListAndWatch(deadline); !s.ok()) return s;
  view->relister_ = std::jthread([v = view.get()](std::stop_token stop) { v->RelistLoop(stop); });
  return view;
}

AssignmentView::AssignmentView(meta::MetaStore* store, ClusterKeys keys, Options options)
    : store_(store),
      keys_(std::move(keys)),
      options_(options),
      current_(std::make_shared<AssignmentSnapshot>()) {}

AssignmentView::~AssignmentView() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  if (relister_.joinable()) relister_.join();
  absl::MutexLock l(&watch_mu_);
  watch_.reset();  // the callback is not running after this
}

std::shared_ptr<const AssignmentSnapshot> AssignmentView::Current() const {
  absl::MutexLock l(&mu_);
  return current_;
}

std::shared_ptr<const AssignmentSnapshot> AssignmentView::WaitNewer(int64_t version,
                                                                    absl::Time deadline) const {
  absl::MutexLock l(&mu_);
  auto newer = [this, version]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return current_->version > version || stopping_;
  };
  mu_.AwaitWithDeadline(absl::Condition(&newer), deadline);
  return current_;
}

std::shared_ptr<const AssignmentSnapshot> AssignmentView::WaitNewer(int64_t version,
                                                                    absl::Time deadline,
                                                                    std::stop_token stop) const {
  // absl::Mutex re-evaluates a waiter's condition whenever the mutex is released, so taking and
  // releasing it once after the stop request wakes the waiter. Registered before the wait
  // takes the lock: if stop was already requested the callback runs right here.
  std::stop_callback wake(stop, [this] { absl::MutexLock l(&mu_); });
  absl::MutexLock l(&mu_);
  auto newer = [this, version, &stop]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return current_->version > version || stopping_ || stop.stop_requested();
  };
  mu_.AwaitWithDeadline(absl::Condition(&newer), deadline);
  return current_;
}

absl::Status AssignmentView::ListAndWatch(absl::Time deadline) {
  absl::StatusOr<meta::RangeResult> listed = store_->Range(keys_.root(), deadline);
  if (!listed.ok()) return listed.status();
  auto snapshot = std::make_shared<AssignmentSnapshot>();
  snapshot->version = listed->revision;
  for (const meta::KeyValue& kv : listed->kvs) Apply(snapshot.get(), kv, /*deleted=*/false);

  absl::MutexLock wl(&watch_mu_);
  watch_.reset();  // a stale watch must not race the new one
  uint64_t generation;
  {
    absl::MutexLock l(&mu_);
    generation = ++generation_;
    current_ = std::move(snapshot);
    relist_needed_ = false;
  }
  absl::StatusOr<std::unique_ptr<meta::WatchHandle>> watch = store_->Watch(
      keys_.root(), listed->revision + 1,
      [this, generation](const meta::WatchResponse& r) { OnWatch(generation, r); }, deadline);
  if (!watch.ok()) {
    absl::MutexLock l(&mu_);
    relist_needed_ = true;
    return watch.status();
  }
  watch_ = *std::move(watch);
  return absl::OkStatus();
}

void AssignmentView::OnWatch(uint64_t generation, const meta::WatchResponse& response) {
  absl::MutexLock l(&mu_);
  if (generation != generation_ || stopping_) return;
  if (!response.status.ok()) {
    spdlog::warn("assignment view: watch of {} ended ({}); listing again", keys_.root(),
                 response.status.ToString());
    relist_needed_ = true;
    return;
  }
  std::shared_ptr<AssignmentSnapshot> next;
  for (const meta::WatchEvent& e : response.events) {
    if (next == nullptr) next = std::make_shared<AssignmentSnapshot>(*current_);
    if (Apply(next.get(), e.kv, e.type == meta::WatchEvent::Type::kDelete)) {
      next->version = std::max(next->version, e.kv.mod_revision);
    }
  }
  // Only tracked keys move the version; an untouched copy is dropped.
  if (next != nullptr && next->version > current_->version) current_ = std::move(next);
}

bool AssignmentView::Apply(AssignmentSnapshot* s, const meta::KeyValue& kv, bool deleted) const {
  auto record = [&](const absl::Status& st) {
    spdlog::error("assignment view: {}", st.ToString());
    s->corrupt[kv.key] = std::string(st.message());
  };
  if (kv.key == keys_.coord()) {
    s->corrupt.erase(kv.key);
    s->coord.reset();
    if (deleted) return true;
    auto info = ParseCoordinatorInfo(kv.key, kv.value);
    if (info.ok()) {
      s->coord = *std::move(info);
    } else {
      record(info.status());
    }
    return true;
  }
  if (std::optional<std::string> name = keys_.PChannelOf(kv.key)) {
    s->corrupt.erase(kv.key);
    s->pchannels.erase(*name);
    if (deleted) return true;
    auto a = ParseAssignment(keys_, kv.key, kv.value);
    if (a.ok()) {
      s->pchannels[*name] = {*std::move(a), kv.mod_revision};
    } else {
      record(a.status());
    }
    return true;
  }
  if (std::optional<int64_t> id = keys_.NodeIdOf(kv.key)) {
    s->corrupt.erase(kv.key);
    s->nodes.erase(*id);
    if (deleted) return true;
    auto n = ParseNodeInfo(keys_, kv.key, kv.value);
    if (n.ok()) {
      s->nodes[*id] = {*std::move(n), kv.mod_revision};
    } else {
      record(n.status());
    }
    return true;
  }
  return false;
}

void AssignmentView::RelistLoop(std::stop_token stop) {
  absl::Duration backoff = options_.relist_backoff;
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      auto wake = [this]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return relist_needed_ || stopping_; };
      mu_.Await(absl::Condition(&wake));
      if (stopping_ || stop.stop_requested()) return;
    }
    absl::Status s = ListAndWatch(absl::Now() + options_.call_timeout);
    if (s.ok()) {
      backoff = options_.relist_backoff;
      continue;
    }
    spdlog::warn("assignment view: listing {} failed ({}); retrying in {}", keys_.root(),
                 s.ToString(), absl::FormatDuration(backoff));
    absl::MutexLock l(&mu_);
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping), backoff)) return;
    backoff = std::min(backoff * 2, options_.relist_backoff_max);
  }
}

}  // namespace kf::streaming
