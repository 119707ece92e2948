#include "streaming/node/streaming_node.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "spdlog/spdlog.h"
#include "wal/wal_metrics.h"

namespace kf::streaming {
namespace {

using kingfisher::v1::PCHANNEL_ASSIGNED;
using kingfisher::v1::PCHANNEL_ASSIGNING;

}  // namespace

absl::StatusOr<std::unique_ptr<StreamingNode>> StreamingNode::Start(meta::MetaStore* store,
                                                                    Options options,
                                                                    absl::Time deadline) {
  if (options.node_id <= 0) return absl::InvalidArgumentError("node id must be >= 1");
  if (options.opener == nullptr || options.wal.tso == nullptr || options.view == nullptr ||
      options.registry == nullptr) {
    return absl::InvalidArgumentError(
        "streaming node needs a WAL opener, a TSO, an assignment view and a registry");
  }
  std::unique_ptr<StreamingNode> node(new StreamingNode(std::move(options)));
  node->store_ = store;

  NodeSession::Options session;
  session.node_id = node->options_.node_id;
  session.address = node->options_.address;
  session.ttl = node->options_.lease_ttl;
  session.call_timeout = node->options_.call_timeout;
  session.on_lost = [n = node.get()] { n->CloseAll("session lost"); };
  auto s = NodeSession::Start(store, node->keys_, std::move(session), deadline);
  if (!s.ok()) return s.status();
  node->session_ = *std::move(s);

  node->reconciler_ =
      std::jthread([n = node.get()](std::stop_token stop) { n->ReconcileLoop(std::move(stop)); });
  return node;
}

StreamingNode::StreamingNode(Options options)
    : options_(std::move(options)), keys_(options_.cluster) {}

StreamingNode::~StreamingNode() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  if (reconciler_.joinable()) {
    reconciler_.request_stop();
    reconciler_.join();
  }
  CloseAll("node stopping");
  session_.reset();  // revokes the lease: the coordinator moves our pchannels at once
}

absl::Status StreamingNode::Drain(absl::Time deadline) {
  absl::Status s = session_->SetState(kingfisher::v1::NODE_DRAINING, deadline);
  if (!s.ok()) return s;
  spdlog::info("node {} draining: waiting for its pchannels to move", options_.node_id);
  absl::MutexLock l(&mu_);
  auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return open_.empty(); };
  if (!mu_.AwaitWithDeadline(absl::Condition(&drained), deadline)) {
    return absl::DeadlineExceededError(absl::StrCat("node ", options_.node_id, " still serves ",
                                                    open_.size(),
                                                    " pchannel(s) at the drain deadline"));
  }
  return absl::OkStatus();
}

absl::Status StreamingNode::WaitServing(size_t n, absl::Time deadline) {
  absl::MutexLock l(&mu_);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return open_.size() >= n || !open_error_.ok();
  };
  mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
  if (open_.size() >= n) return absl::OkStatus();
  if (!open_error_.ok()) return open_error_;
  return absl::DeadlineExceededError(
      absl::StrCat("node ", options_.node_id, " serves ", open_.size(), " of ", n, " pchannels"));
}

void StreamingNode::ReconcileLoop(std::stop_token stop) {
  int64_t seen = -1;
  while (!stop.stop_requested()) {
    std::shared_ptr<const AssignmentSnapshot> snapshot =
        options_.view->WaitNewer(seen, absl::Now() + options_.reconcile_interval, stop);
    if (stop.stop_requested()) return;
    seen = snapshot->version;
    Reconcile(*snapshot);
  }
}

void StreamingNode::Reconcile(const AssignmentSnapshot& snapshot) {
  std::map<std::string, Term> open_terms;
  std::map<std::string, absl::Status> broken;
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return;
    for (const auto& [name, w] : open_) {
      open_terms[name] = w->term();
      // A WAL its backend broke (e.g. its store was unreachable for too long) is reopened at
      // the same term: appends resume once the store is back. A fenced one waits for the move.
      if (absl::Status h = w->Health(); !h.ok() && !IsFenced(h)) broken[name] = h;
    }
  }
  const auto owned = [](const kingfisher::v1::PChannelAssignment& a) {
    return a.state() == PCHANNEL_ASSIGNING || a.state() == PCHANNEL_ASSIGNED;
  };
  // Not open here, or open at an older term than `a` assigns.
  const auto newer = [&](const std::string& name, const kingfisher::v1::PChannelAssignment& a) {
    auto open = open_terms.find(name);
    return open == open_terms.end() || open->second < Term(a.term());
  };
  if (options_.queries != nullptr) {
    // The checkpoints of the pchannels to open start loading now, each on a thread of its own,
    // while the WALs open one after the other (QueryRegistry::Prefetch). A prefetch of one now
    // owned by another node is dropped; one unassigned for the moment (a restarting standalone's
    // pchannels, between its old term and the next) is kept: it is likely to come back here.
    for (const auto& [name, p] : snapshot.pchannels) {
      const auto& a = p.assignment;
      if (!owned(a)) continue;
      if (a.node() != options_.node_id) {
        options_.queries->DropPrefetch(name);
      } else if (newer(name, a)) {
        options_.queries->Prefetch(name);
      }
    }
  }
  for (const auto& [name, p] : snapshot.pchannels) {
    const auto& a = p.assignment;
    const bool mine = a.node() == options_.node_id && owned(a);
    auto open = open_terms.find(name);
    if (!mine) {
      if (open != open_terms.end()) {
        Close(name, absl::StrCat("assigned to node ", a.node(), " at term ", a.term()));
      }
      continue;
    }
    const bool reopen =
        open != open_terms.end() && open->second == Term(a.term()) && broken.contains(name);
    if (reopen) {
      spdlog::warn("node {}: reopening {} at term {}: {}", options_.node_id, name, a.term(),
                   broken[name].ToString());
    }
    if (newer(name, a) || reopen) {
      if (!session_->registered()) continue;  // reopened after registering again
      if (absl::Status s = Open(name, Term(a.term())); !s.ok()) {
        spdlog::error("node {}: {} (retrying)", options_.node_id, s.ToString());
        continue;
      }
    } else if (open->second > Term(a.term())) {
      continue;  // a stale snapshot; a newer one follows
    }
    if (a.state() == PCHANNEL_ASSIGNING) ConfirmAssigned(p);
  }
  for (const auto& [name, term] : open_terms) {
    if (!snapshot.pchannels.contains(name)) Close(name, "no longer in the assignment");
  }
}

absl::Status StreamingNode::Open(const std::string& pchannel, Term term) {
  absl::MutexLock l(&mu_);
  if (stopping_) return absl::CancelledError("node stopping");
  // Checked under mu_: a session lost after this point closes what we open (on_lost waits
  // for mu_), one lost before it keeps us from opening on a stale assignment.
  if (!session_->registered()) return absl::UnavailableError("not registered (session lost)");
  if (auto it = open_.find(pchannel); it != open_.end()) {
    options_.registry->Remove(pchannel);
    // At a newer term the old one's clients must re-route; at the same term (a broken WAL
    // reopened) the assignment does not change, and they retry as against a restart.
    it->second->Close(term > it->second->term()
                          ? StreamingError(StreamingCode::kUnmatchedChannelTerm,
                                           absl::StrCat("pchannel ", pchannel,
                                                        " is reopening at term ", term.value()))
                          : absl::OkStatus());
    if (options_.queries != nullptr) options_.queries->Unfollow(pchannel);
    open_.erase(it);
  }
  auto failed = [&](const absl::Status& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    open_error_ = WithContext(s, absl::StrCat("open ", pchannel, " at term ", term.value()));
    return open_error_;
  };
  metrics::Registry& registry =
      options_.wal.metrics != nullptr ? *options_.wal.metrics : metrics::DefaultRegistry();
  auto backend = options_.opener->Open(
      wal::OpenOptions{.pchannel = pchannel,
                       .term = term,
                       .flush_duration = wal::FlushDuration(registry, pchannel)});
  if (!backend.ok()) return failed(backend.status());
  wal::WalOptions wo = options_.wal;
  wo.pchannel = pchannel;
  // Its AppendBatch callers, produce streams and the replicate appender, wait for each batch.
  wo.batch_appenders_write = true;
  auto w = wal::OpenWal(std::move(wo), *std::move(backend));
  if (!w.ok()) return failed(w.status());
  std::shared_ptr<wal::Wal> wal(*std::move(w));
  open_error_ = absl::OkStatus();
  open_[pchannel] = wal;
  // Followed before it is served: a search that finds the pchannel here finds its shards
  // (rebuilding from the log: a search waits until they applied its timestamp).
  if (options_.queries != nullptr) options_.queries->Follow(wal);
  options_.registry->Put(wal);
  spdlog::info("node {}: serving {} at term {}", options_.node_id, pchannel, term.value());
  return absl::OkStatus();
}

void StreamingNode::Close(const std::string& pchannel, std::string_view why) {
  absl::MutexLock l(&mu_);
  auto it = open_.find(pchannel);
  if (it == open_.end()) return;
  options_.registry->Remove(pchannel);  // new requests: CHANNEL_NOT_EXIST
  // Appends and reads already past the registry are refused alike, unless the node is
  // stopping: the client then waits for the new assignment instead of trying this node again.
  it->second->Close(stopping_
                        ? absl::OkStatus()
                        : StreamingError(StreamingCode::kChannelNotExist,
                                         absl::StrCat("pchannel ", pchannel, " left node ",
                                                      options_.node_id, " (", ToAbsl(why), ")")));
  if (options_.queries != nullptr) options_.queries->Unfollow(pchannel);
  spdlog::info("node {}: closed {} at term {} ({})", options_.node_id, pchannel,
               it->second->term().value(), std::string(why));
  open_.erase(it);
}

void StreamingNode::CloseAll(std::string_view why) {
  std::vector<std::string> names;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [name, w] : open_) names.push_back(name);
  }
  for (const auto& name : names) Close(name, why);
}

void StreamingNode::ConfirmAssigned(const AssignmentSnapshot::PChannel& p) {
  kingfisher::v1::PChannelAssignment next = p.assignment;
  next.set_state(PCHANNEL_ASSIGNED);
  const std::string key = keys_.pchannel(p.assignment.pchannel());
  absl::StatusOr<meta::TxnResult> r = store_->Txn(
      {meta::Compare::ModRevisionIs(key, p.mod_revision)},
      {meta::Op::Put(key, next.SerializeAsString())}, {}, absl::Now() + options_.call_timeout);
  if (!r.ok()) {
    spdlog::warn("node {}: confirming {} at term {} failed ({}); retrying on the next round",
                 options_.node_id, p.assignment.pchannel(), p.assignment.term(),
                 r.status().ToString());
  }
}

}  // namespace kf::streaming
