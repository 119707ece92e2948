// DdlHost: the coordinator's DDL (docs/ddl.md) for one leadership term at a time.
//
// The Coordinator reports when it starts acting (TakeOffice, with the create_revision of its
// `coord` key, the fence of every DDL write) and when it stops (LeaveOffice); see
// Coordinator::Options::on_acting. Each term gets fresh objects on its own thread:
//   1. the previous term's thread is joined (its broadcaster stopped: two broadcasters never
//      drive the same task);
//   2. a ddl::Broadcaster fenced by the term's revision and a ddl::Catalog over it (the
//      catalog registers the ACK callbacks, so it is built before Recover);
//   3. Broadcaster::Recover, retried with backoff until it succeeds or the term ends;
//   4. only then catalog() hands the catalog out, and the term's thread applies the primary's
//      DDL replicated here (ddl::ReplicatedDdl) until the term ends; then catalog() stops
//      handing out and the broadcaster is stopped (its tasks stay persisted for the next term).
// The coordinator's balancing loop never waits for any of this: the hooks only signal.
//
// Thread-safety: thread-safe; TakeOffice/LeaveOffice are meant for the coordinator's thread,
// Stop for the owner (never from a hook). Ownership: borrows the store and the appender (both
// must outlive the DdlHost and every catalog it handed out); owns the term thread. A catalog
// returned by catalog() keeps its term's objects alive; once the term ended its calls fail
// with the broadcaster's UNAVAILABLE.
// Errors: catalog() is UNAVAILABLE "not the acting coordinator" outside a term and
// "recovering DDL tasks" before Recover succeeded.
#pragma once

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/meta/meta_store.h"
#include "streaming/cluster_meta.h"
#include "streaming/ddl/broadcast_appender.h"
#include "streaming/ddl/broadcaster.h"
#include "streaming/ddl/catalog.h"
#include "streaming/ddl/replicate_configurator.h"
#include "streaming/ddl/replicated_ddl.h"

namespace kf::streaming {

class DdlHost {
 public:
  struct Options {
    std::string cluster = "kf";
    std::vector<std::string> pchannels;  // the cluster's, in configured order
    ddl::Broadcaster::Options broadcaster;
    absl::Duration call_timeout = absl::Seconds(5);          // per store call (catalog, Recover)
    absl::Duration retry_backoff = absl::Milliseconds(100);  // between Recover attempts
    absl::Duration retry_backoff_max = absl::Seconds(5);
    // How often the term looks for the primary's DDL to apply (ddl::ReplicatedDdl).
    absl::Duration replicated_ddl_interval = absl::Milliseconds(250);
  };

  DdlHost(meta::MetaStore* store, ddl::BroadcastAppender* appender, Options options);
  // Stop().
  ~DdlHost();
  DdlHost(const DdlHost&) = delete;
  DdlHost& operator=(const DdlHost&) = delete;

  // A term starts (ending the previous one, if any). Does not block.
  void TakeOffice(int64_t coord_create_revision);
  // The term ends: catalog() refuses at once, the broadcaster stops on the term's thread.
  // Does not block.
  void LeaveOffice();

  // The acting term's catalog, once recovered.
  absl::StatusOr<std::shared_ptr<ddl::Catalog>> catalog() const;
  // The acting term's replicate configurator, once recovered (as catalog()).
  absl::StatusOr<std::shared_ptr<ddl::ReplicateConfigurator>> replicate() const;
  // Waits until catalog() succeeds; false at the deadline.
  bool WaitServing(absl::Time deadline) const;

  // Ends the term, joins its thread (and so its broadcaster's workers); TakeOffice is ignored
  // from then on. Idempotent.
  void Stop();

 private:
  struct Term;

  void RunTerm(std::stop_token stop, int64_t revision, std::jthread previous);
  // The recovered term's objects, or why there are none.
  absl::StatusOr<std::shared_ptr<Term>> Serving() const;
  // REQUIRES: `term` recovered. False when the term ended meanwhile.
  bool Publish(const std::stop_token& stop, std::shared_ptr<Term> term);

  meta::MetaStore* const store_;
  ddl::BroadcastAppender* const appender_;
  const Options options_;
  const ClusterKeys keys_;

  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool in_office_ ABSL_GUARDED_BY(mu_) = false;
  std::string last_error_ ABSL_GUARDED_BY(mu_);         // of the current term's last Recover
  std::shared_ptr<Term> serving_ ABSL_GUARDED_BY(mu_);  // set once recovered
  std::jthread thread_ ABSL_GUARDED_BY(mu_);            // the latest term's
};

}  // namespace kf::streaming
