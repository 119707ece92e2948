// ProducerAppender: the production BroadcastAppender, over the public client library
// (include/kingfisher/producer.h). The coordinator process opens it on its own advertised
// address: the coordinator serves WatchAssignments there, so the client's router finds the
// node of every pchannel (in standalone, this very process).
//
// Each copy goes out as the broadcaster made it: the producer keeps a `_bh` message's `_ik`
// (the node deduplicates on it), starts no `wal.autocommit` for it, and opens one
// `wal.dist_append` per network attempt under the broadcast's context (AppendOptions::trace).
// The in-process fast path is deliberately not used, so every copy crosses the network and
// the broadcast's trace has the same shape in standalone as in a cluster (docs/tracing.md §6).
// Errors reach the broadcaster with their streaming code (e.g. COLLECTION_NOT_FOUND).
//
// Thread-safety: thread-safe. Ownership: owns the client and its producer. Open once, before
// the first broadcast; Close after the broadcaster that uses it stopped.
// Errors: AppendAsync before Open or after Close is UNAVAILABLE; otherwise the producer's
// (producer.h). Open: the client's Connect/CreateProducer errors (INVALID_ARGUMENT).
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "kingfisher/client.h"
#include "streaming/ddl/broadcast_appender.h"

namespace kf::streaming::ddl {

class ProducerAppender final : public BroadcastAppender {
 public:
  // `options.endpoint` is ignored (Open gives it); the rest (timeouts, retry) is used as is.
  explicit ProducerAppender(kingfisher::ClientOptions options = {});
  // Close().
  ~ProducerAppender() override;
  ProducerAppender(const ProducerAppender&) = delete;
  ProducerAppender& operator=(const ProducerAppender&) = delete;

  // Connects to `endpoint` (lazily: nothing waits for the network). FAILED_PRECONDITION when
  // already opened or closed.
  absl::Status Open(const std::string& endpoint);

  void AppendAsync(const trace::Context& ctx, MutableMessage message, absl::Time deadline,
                   Done done) override;

  // Closes the producer: pending appends complete (those needing a retry with CANCELLED), new
  // ones fail with UNAVAILABLE. Idempotent.
  void Close();

 private:
  kingfisher::ClientOptions options_;
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<kingfisher::Client> client_ ABSL_GUARDED_BY(mu_);
  // Shared with the appends being issued, so Close never destroys it under one.
  std::shared_ptr<kingfisher::Producer> producer_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::streaming::ddl
