#include "streaming/coord/ddl_host.h"

#include <string>
#include <utility>

#include "common/backoff.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace kf::streaming {
namespace {

// Until `stop`: applies the primary's DDL that this cluster's nodes replicated (a range read of
// an empty prefix when the cluster is no secondary).
void ApplyReplicatedDdl(const std::stop_token& stop, ddl::ReplicatedDdl& replicated,
                        absl::Duration interval) {
  std::string last_error;
  while (SleepUnlessStopped(interval, stop)) {
    absl::StatusOr<int> applied = replicated.Poll(stop);
    if (!applied.ok() && applied.status().ToString() != last_error) {
      spdlog::warn("ddl: looking for replicated DDL failed ({})", applied.status().ToString());
    }
    last_error = applied.ok() ? "" : applied.status().ToString();
  }
}

}  // namespace

// One term's DDL objects. The catalog and the replicate configurator borrow the broadcaster:
// declared after it, so they go first.
struct DdlHost::Term {
  Term(meta::MetaStore* store, const ClusterKeys& keys, int64_t revision,
       ddl::BroadcastAppender* appender, const Options& o)
      : broadcaster(store, keys, revision, appender, o.broadcaster),
        catalog(
            &broadcaster, keys,
            {.cluster_id = o.cluster, .pchannels = o.pchannels, .call_timeout = o.call_timeout}),
        replicate(
            &broadcaster, keys,
            {.cluster_id = o.cluster, .pchannels = o.pchannels, .call_timeout = o.call_timeout}),
        replicated(&broadcaster.store(), keys, catalog.ReplicatedCallback(), o.call_timeout) {}

  ddl::Broadcaster broadcaster;
  ddl::Catalog catalog;
  ddl::ReplicateConfigurator replicate;
  ddl::ReplicatedDdl replicated;  // the primary's DDL, when this cluster is a secondary
};

DdlHost::DdlHost(meta::MetaStore* store, ddl::BroadcastAppender* appender, Options options)
    : store_(store), appender_(appender), options_(std::move(options)), keys_(options_.cluster) {}

DdlHost::~DdlHost() { Stop(); }

void DdlHost::TakeOffice(int64_t coord_create_revision) {
  absl::MutexLock l(&mu_);
  if (stopped_) return;
  std::jthread previous = std::move(thread_);
  previous.request_stop();
  in_office_ = true;
  serving_.reset();
  last_error_.clear();
  // The new thread joins the previous one first, so this never waits.
  thread_ = std::jthread(
      [this, coord_create_revision](std::stop_token stop, std::jthread prev) {
        RunTerm(std::move(stop), coord_create_revision, std::move(prev));
      },
      std::move(previous));
}

void DdlHost::LeaveOffice() {
  absl::MutexLock l(&mu_);
  in_office_ = false;
  serving_.reset();
  thread_.request_stop();
}

void DdlHost::Stop() {
  std::jthread thread;
  {
    absl::MutexLock l(&mu_);
    stopped_ = true;
    in_office_ = false;
    serving_.reset();
    thread = std::move(thread_);
  }
  thread.request_stop();
  if (thread.joinable()) thread.join();
}

absl::StatusOr<std::shared_ptr<DdlHost::Term>> DdlHost::Serving() const {
  absl::MutexLock l(&mu_);
  if (serving_ != nullptr) return serving_;
  if (!in_office_) return absl::UnavailableError("not the acting coordinator");
  if (last_error_.empty()) return absl::UnavailableError("recovering DDL tasks");
  return absl::UnavailableError("recovering DDL tasks; last attempt: " + last_error_);
}

absl::StatusOr<std::shared_ptr<ddl::Catalog>> DdlHost::catalog() const {
  ASSIGN_OR_RETURN(std::shared_ptr<Term> term, Serving());
  return std::shared_ptr<ddl::Catalog>(term, &term->catalog);
}

absl::StatusOr<std::shared_ptr<ddl::ReplicateConfigurator>> DdlHost::replicate() const {
  ASSIGN_OR_RETURN(std::shared_ptr<Term> term, Serving());
  return std::shared_ptr<ddl::ReplicateConfigurator>(term, &term->replicate);
}

bool DdlHost::WaitServing(absl::Time deadline) const {
  absl::MutexLock l(&mu_);
  auto serving = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return serving_ != nullptr; };
  return mu_.AwaitWithDeadline(absl::Condition(&serving), deadline);
}

bool DdlHost::Publish(const std::stop_token& stop, std::shared_ptr<Term> term) {
  // Every request_stop of a term happens under mu_, so this check cannot miss one.
  absl::MutexLock l(&mu_);
  if (stop.stop_requested()) return false;
  serving_ = std::move(term);
  last_error_.clear();
  return true;
}

void DdlHost::RunTerm(std::stop_token stop, int64_t revision, std::jthread previous) {
  if (previous.joinable()) previous.join();
  auto term = std::make_shared<Term>(store_, keys_, revision, appender_, options_);
  spdlog::info("ddl: acting coordinator (coord revision {}); recovering DDL tasks", revision);
  Backoff backoff(options_.retry_backoff, options_.retry_backoff_max);
  bool serving = false;
  while (!stop.stop_requested()) {
    absl::Status s = term->broadcaster.Recover(absl::Now() + options_.call_timeout);
    if (s.ok()) {
      serving = Publish(stop, term);
      if (serving) spdlog::info("ddl: DDL recovered; serving DDL");
      break;
    }
    const absl::Duration d = backoff.Next();
    spdlog::warn("ddl: recovering DDL tasks failed ({}); retrying in {}", s.ToString(),
                 absl::FormatDuration(d));
    {
      absl::MutexLock l(&mu_);
      if (!stop.stop_requested()) last_error_ = s.ToString();  // else: another term's
    }
    if (!SleepUnlessStopped(d, stop)) break;
  }
  if (serving) ApplyReplicatedDdl(stop, term->replicated, options_.replicated_ddl_interval);
  {
    absl::MutexLock l(&mu_);
    if (serving_ == term) serving_.reset();
  }
  // Calls still holding the catalog get UNAVAILABLE from here on; the tasks stay persisted.
  term->broadcaster.Stop();
  spdlog::info(
      "ddl: DDL stopped (coord revision {}); unfinished broadcasts resume in the next term",
      revision);
}

}  // namespace kf::streaming
