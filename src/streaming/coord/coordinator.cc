#include "streaming/coord/coordinator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_join.h"
#include "common/backoff.h"
#include "spdlog/spdlog.h"
#include "streaming/coord/balancer.h"

namespace kf::streaming {
namespace {

using kingfisher::v1::PChannelAssignment;

// pchannels created per store transaction (etcd refuses more than 128 operations by default).
constexpr size_t kCreateBatch = 60;

std::string Str(const absl::Status& s) { return s.ToString(); }
std::string Str(absl::Duration d) { return absl::FormatDuration(d); }

}  // namespace

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Create(meta::MetaStore* store,
                                                                 Options options,
                                                                 absl::Time deadline) {
  std::unique_ptr<Coordinator> c(new Coordinator(store, std::move(options)));
  absl::StatusOr<std::unique_ptr<AssignmentView>> view =
      AssignmentView::Start(store, c->keys_, c->options_.view, deadline);
  if (!view.ok()) return view.status();
  c->view_ = *std::move(view);
  TimestampOracle::Options tso = c->options_.tso;
  tso.call_timeout = c->options_.call_timeout;
  tso.on_deposed = [raw = c.get()] { raw->Nudge(); };
  c->oracle_ = std::make_unique<TimestampOracle>(store, c->keys_.tso(), std::move(tso));
  return c;
}

Coordinator::Coordinator(meta::MetaStore* store, Options options)
    : store_(store), options_(std::move(options)), keys_(options_.cluster) {}

Coordinator::~Coordinator() { Stop(); }

void Coordinator::Start(std::string address) {
  address_ = std::move(address);
  thread_ = std::jthread([this](std::stop_token stop) { Run(std::move(stop)); });
}

void Coordinator::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

bool Coordinator::acting() const {
  absl::MutexLock l(&mu_);
  return acting_;
}

bool Coordinator::WaitActing(bool acting, absl::Time deadline) const {
  absl::MutexLock l(&mu_);
  auto reached = [this, acting]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return acting_ == acting; };
  return mu_.AwaitWithDeadline(absl::Condition(&reached), deadline);
}

bool Coordinator::WaitBalanced(int64_t version, absl::Time deadline) const {
  absl::MutexLock l(&mu_);
  auto reached = [this, version]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return balanced_version_ >= version; };
  return mu_.AwaitWithDeadline(absl::Condition(&reached), deadline);
}

void Coordinator::SetActing(bool acting, int64_t create_revision) {
  {
    absl::MutexLock l(&mu_);
    if (acting_ == acting) return;
    acting_ = acting;
  }
  // Outside mu_: a hook may call acting(). Only this thread changes acting_, so the hooks see
  // the transitions in order.
  if (acting && options_.on_acting) options_.on_acting(create_revision);
  if (!acting && options_.on_not_acting) options_.on_not_acting();
}

std::shared_ptr<const AssignmentSnapshot> Coordinator::Wait(int64_t version, absl::Time deadline,
                                                            std::stop_token stop) {
  std::stop_source wake;
  std::stop_callback forward(stop, [&wake] { wake.request_stop(); });
  {
    absl::MutexLock l(&mu_);
    if (nudged_) {
      nudged_ = false;
      return view_->Current();
    }
    wake_ = &wake;
  }
  auto snapshot = view_->WaitNewer(version, deadline, wake.get_token());
  absl::MutexLock l(&mu_);
  wake_ = nullptr;
  nudged_ = false;
  return snapshot;
}

void Coordinator::Nudge() {
  absl::MutexLock l(&mu_);
  nudged_ = true;
  if (wake_ != nullptr) wake_->request_stop();
}

bool Coordinator::Sleep(absl::Duration d, std::stop_token stop) {
  return SleepUnlessStopped(d, std::move(stop));
}

void Coordinator::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    std::optional<Leadership> won = Campaign(stop);
    if (!won) return;
    Lead(stop, *won);
  }
}

std::optional<Coordinator::Leadership> Coordinator::Campaign(std::stop_token stop) {
  Backoff backoff(options_.retry_backoff, options_.retry_backoff_max);
  kingfisher::v1::CoordinatorInfo info;
  info.set_address(address_);
  const std::string value = info.SerializeAsString();
  const std::string coord = keys_.coord();
  std::string standing_by_for;  // the leader we last logged about
  while (!stop.stop_requested()) {
    // The lease's TTL runs from (at the latest) now: trust it from here.
    const absl::Time start = absl::Now();
    absl::StatusOr<meta::LeaseGrant> lease =
        store_->GrantLease(options_.lease_ttl, start + options_.call_timeout);
    if (!lease.ok()) {
      const absl::Duration d = backoff.Next();
      spdlog::warn("coordinator: cannot reach the metadata store to campaign ({}); retrying in {}",
                   Str(lease.status()), Str(d));
      Sleep(d, stop);
      continue;
    }
    const Leadership won{.lease = lease->id,
                         .create_revision = 0,
                         .ttl = lease->ttl,
                         .valid_until = start + lease->ttl};
    absl::StatusOr<meta::TxnResult> txn =
        store_->Txn({meta::Compare::Absent(coord)}, {meta::Op::Put(coord, value, lease->id)},
                    {meta::Op::Get(coord)}, absl::Now() + options_.call_timeout);
    if (txn.ok() && txn->succeeded) {
      Leadership l = won;
      l.create_revision = txn->revision;
      return l;
    }
    if (!txn.ok()) {
      // Unknown outcome: the key tells whether the put landed (it carries our lease).
      absl::StatusOr<meta::GetResult> got = store_->Get(coord, absl::Now() + options_.call_timeout);
      if (got.ok() && got->kv.lease == lease->id) {
        Leadership l = won;
        l.create_revision = got->kv.create_revision;
        return l;
      }
      store_->RevokeLease(lease->id, absl::Now() + options_.call_timeout).IgnoreError();
      const absl::Duration d = backoff.Next();
      spdlog::warn("coordinator: campaign failed ({}); retrying in {}", Str(txn.status()), Str(d));
      Sleep(d, stop);
      continue;
    }
    // Taken: stand by until the leader's key goes away (the view follows it).
    backoff.Reset();
    store_->RevokeLease(lease->id, absl::Now() + options_.call_timeout).IgnoreError();
    std::string leader = "?";
    meta::LeaseId leader_lease = meta::kNoLease;
    if (!txn->results.empty() && !txn->results[0].kvs.empty()) {
      const meta::KeyValue& kv = txn->results[0].kvs[0];
      leader_lease = kv.lease;
      auto parsed = ParseCoordinatorInfo(coord, kv.value);
      if (parsed.ok()) leader = parsed->address();
    }
    if (options_.exclusive && leader_lease != meta::kNoLease) {
      spdlog::info("coordinator: removing the leftover coord key of an earlier run (lease {})",
                   leader_lease);
      absl::Status revoked = store_->RevokeLease(leader_lease, absl::Now() + options_.call_timeout);
      if (revoked.ok() || absl::IsNotFound(revoked)) continue;
      spdlog::warn("coordinator: revoking the leftover lease failed ({})", Str(revoked));
    }
    if (leader != standing_by_for) {
      spdlog::info("coordinator: standing by, the leader is at {}", leader);
      standing_by_for = leader;
    }
    // The view may lag behind the store: re-campaign after a TTL regardless, and never
    // spin when it still shows no leader.
    const absl::Time until = absl::Now() + won.ttl;
    auto s = view_->Current();
    bool waited = false;
    while (s->coord.has_value() && absl::Now() < until && !stop.stop_requested()) {
      s = Wait(s->version, until, stop);
      waited = true;
    }
    if (!waited) Sleep(backoff.Next(), stop);
  }
  return std::nullopt;
}

void Coordinator::Lead(std::stop_token stop, Leadership leadership) {
  spdlog::info("coordinator: elected leader cluster={} address={} lease={} ttl={}",
               options_.cluster, address_, leadership.lease, Str(leadership.ttl));
  Backoff keepalive_backoff(options_.retry_backoff, options_.retry_backoff_max);
  Backoff retry_backoff(options_.retry_backoff, options_.retry_backoff_max);
  const absl::Duration keepalive_every = leadership.ttl / 3;
  absl::Time next_keepalive = absl::Now() + keepalive_every;
  absl::Time next_round = absl::Now();      // periodic balancing, or the retry of a failed one
  absl::Time next_rebalance = absl::Now();  // at most one rebalancing move per interval
  absl::Time next_confirm = absl::Now();    // retry of confirming leadership
  int64_t balanced_version = -1;
  bool acting = false;
  bool keepalive_failing = false;
  bool lost = false;

  while (!stop.stop_requested() && !lost) {
    absl::Time now = absl::Now();
    if (now >= next_keepalive) {
      absl::StatusOr<absl::Duration> ttl = store_->KeepAliveOnce(
          leadership.lease, now + std::min(options_.call_timeout, keepalive_every));
      if (ttl.ok()) {
        leadership.valid_until = now + *ttl;
        next_keepalive = now + keepalive_every;
        keepalive_backoff.Reset();
        if (keepalive_failing) spdlog::info("coordinator: lease keepalive works again");
        keepalive_failing = false;
      } else if (absl::IsNotFound(ttl.status())) {
        spdlog::warn(
            "coordinator: lost the leadership (lease {} is gone); re-entering the election",
            leadership.lease);
        lost = true;
        break;
      } else {
        const absl::Duration d = std::min(keepalive_backoff.Next(), keepalive_every);
        spdlog::error("coordinator: lease keepalive failed ({}); leadership trusted for {} more",
                      Str(ttl.status()),
                      Str(std::max(leadership.valid_until - now, absl::ZeroDuration())));
        keepalive_failing = true;
        next_keepalive = now + d;
      }
      now = absl::Now();
    }

    if (acting && absl::IsFailedPrecondition(oracle_->state())) {
      spdlog::warn("coordinator: the timestamp oracle was deposed; confirming leadership");
      acting = false;
      SetActing(false);
      next_confirm = now;
    }
    if (now >= leadership.valid_until) {
      if (acting) {
        spdlog::error(
            "coordinator: no successful keepalive for a TTL; stopped acting until the "
            "lease is confirmed");
        oracle_->Deactivate(absl::UnavailableError("not the coordinator: leadership unconfirmed"));
        acting = false;
        SetActing(false);
      }
    } else if (!acting && now >= next_confirm) {
      absl::StatusOr<bool> ours = StillLeader(leadership);
      absl::Status activated = ours.ok() && *ours
                                   ? oracle_->Activate(absl::Now() + options_.call_timeout)
                                   : ours.status();
      if (ours.ok() && !*ours) {
        spdlog::warn("coordinator: the coord key is no longer ours; re-entering the election");
        lost = true;
        break;
      }
      if (activated.ok()) {
        acting = true;
        SetActing(true, leadership.create_revision);
        balanced_version = -1;  // reconcile at once
        retry_backoff.Reset();
        spdlog::info("coordinator: acting as leader (timestamp mark {})", oracle_->mark());
      } else {
        const absl::Duration d = retry_backoff.Next();
        spdlog::warn("coordinator: cannot confirm leadership ({}); retrying in {}", Str(activated),
                     Str(d));
        next_confirm = absl::Now() + d;
      }
    }

    std::shared_ptr<const AssignmentSnapshot> snapshot = view_->Current();
    if (acting && (snapshot->version != balanced_version || absl::Now() >= next_round)) {
      const absl::Time round_start = absl::Now();
      RoundResult r = Reconcile(*snapshot, leadership, round_start >= next_rebalance);
      if (r.lost) {
        spdlog::warn(
            "coordinator: a write found the coord key no longer ours; re-entering the "
            "election");
        lost = true;
        break;
      }
      if (r.rebalanced) next_rebalance = round_start + options_.balance_interval;
      balanced_version = snapshot->version;
      if (r.complete) {
        absl::MutexLock l(&mu_);
        balanced_version_ = balanced_version;
      }
      if (r.ok) {
        retry_backoff.Reset();
        next_round = round_start + options_.balance_interval;
      } else {
        next_round = round_start + retry_backoff.Next();
      }
    }

    absl::Time deadline = next_keepalive;
    if (acting) {
      deadline = std::min({deadline, next_round, leadership.valid_until});
    } else if (absl::Now() < leadership.valid_until) {
      deadline = std::min(deadline, next_confirm);
    }
    Wait(acting ? balanced_version : snapshot->version, deadline, stop);
  }

  SetActing(false);
  oracle_->Deactivate(absl::UnavailableError("not the coordinator"));
  // Resigning (or cleaning up after a loss): a standby takes over without waiting for the TTL.
  absl::Status revoked = store_->RevokeLease(leadership.lease, absl::Now() + options_.call_timeout);
  if (!lost) {
    if (revoked.ok()) {
      spdlog::info("coordinator: stepped down (lease {} revoked)", leadership.lease);
    } else {
      spdlog::warn("coordinator: stepped down; revoking lease {} failed ({}), it expires in {}",
                   leadership.lease, Str(revoked), Str(leadership.ttl));
    }
  }
}

absl::StatusOr<bool> Coordinator::StillLeader(const Leadership& leadership) {
  absl::StatusOr<meta::GetResult> got =
      store_->Get(keys_.coord(), absl::Now() + options_.call_timeout);
  if (absl::IsNotFound(got.status())) return false;
  if (!got.ok()) return got.status();
  return got->kv.lease == leadership.lease && got->kv.create_revision == leadership.create_revision;
}

void Coordinator::LogAnomalies(const AssignmentSnapshot& snapshot) {
  for (const auto& [key, why] : snapshot.corrupt) {
    if (logged_anomalies_.insert("corrupt:" + key).second) {
      spdlog::error("coordinator: metadata key {} is corrupt ({}); it is left as is", key, why);
    }
  }
  const std::set<std::string> configured(options_.pchannels.begin(), options_.pchannels.end());
  for (const auto& [name, p] : snapshot.pchannels) {
    if (configured.count(name) == 0 && logged_anomalies_.insert("unconfigured:" + name).second) {
      spdlog::warn("coordinator: pchannel {} is in the store but not configured; left as is", name);
    }
  }
}

// A round that stopped at a write that was not applied: the other moves were planned on data
// that is now stale. A conflict is progress (the next snapshot re-runs the round at once); an
// unknown outcome retries after a backoff unless the view shows the write first.
Coordinator::RoundResult Coordinator::Ended(WriteOutcome w, RoundResult so_far) {
  so_far.ok = w == WriteOutcome::kConflict;
  so_far.complete = false;
  so_far.lost = w == WriteOutcome::kLost;
  return so_far;
}

Coordinator::RoundResult Coordinator::Reconcile(const AssignmentSnapshot& snapshot,
                                                const Leadership& leadership,
                                                bool allow_rebalance) {
  LogAnomalies(snapshot);
  RoundResult result;
  // The missing pchannels in as few writes as etcd allows (its default --max-txn-ops is 128):
  // up to kCreateBatch pchannels a snapshot holds either none or all of them, so clients can
  // tell a name outside the cluster (client/router.h).
  std::vector<PChannelWrite> create;
  for (const std::string& name : options_.pchannels) {
    if (snapshot.pchannels.count(name) != 0 || snapshot.corrupt.count(keys_.pchannel(name)) != 0) {
      continue;
    }
    PChannelWrite& w = create.emplace_back();
    w.value.set_pchannel(name);
    w.value.set_state(kingfisher::v1::PCHANNEL_UNINITIALIZED);
  }
  for (size_t i = 0; i < create.size(); i += kCreateBatch) {
    const std::vector<PChannelWrite> batch(
        create.begin() + i, create.begin() + std::min(create.size(), i + kCreateBatch));
    const WriteOutcome w = Write(batch, leadership);
    if (w != WriteOutcome::kWritten) return Ended(w, result);
    for (const auto& c : batch) {
      spdlog::info("coordinator: created pchannel {} (UNINITIALIZED)", c.value.pchannel());
    }
  }
  for (const Move& m : Balance(snapshot, options_.pchannels, allow_rebalance)) {
    const AssignmentSnapshot::PChannel& p = snapshot.pchannels.at(m.pchannel);
    PChannelAssignment next = p.assignment;
    next.set_node(m.to);
    if (m.to != 0) {
      next.set_term(p.assignment.term() + 1);
      next.set_state(kingfisher::v1::PCHANNEL_ASSIGNING);
    } else {
      next.set_state(kingfisher::v1::PCHANNEL_UNAVAILABLE);
    }
    const WriteOutcome w = Write({{p.mod_revision, next}}, leadership);
    if (w != WriteOutcome::kWritten) return Ended(w, result);
    spdlog::info(
        "assignment changed pchannel={} old_node={} new_node={} old_term={} term={} state={} "
        "reason={}",
        m.pchannel, p.assignment.node(), next.node(), p.assignment.term(), next.term(),
        PChannelStateName(next.state()), MoveReasonName(m.reason));
    if (m.reason == Move::Reason::kRebalance) result.rebalanced = true;
  }
  return result;
}

Coordinator::WriteOutcome Coordinator::Write(const std::vector<PChannelWrite>& writes,
                                             const Leadership& leadership) {
  const std::string coord = keys_.coord();
  std::vector<meta::Compare> compares = {
      meta::Compare::CreateRevisionIs(coord, leadership.create_revision)};
  std::vector<meta::Op> puts;
  std::vector<std::string> keys;
  for (const PChannelWrite& w : writes) {
    keys.push_back(keys_.pchannel(w.value.pchannel()));
    compares.push_back(meta::Compare::ModRevisionIs(keys.back(), w.mod_revision));
    puts.push_back(meta::Op::Put(keys.back(), w.value.SerializeAsString()));
  }
  const std::string key = absl::StrJoin(keys, ",");
  absl::StatusOr<meta::TxnResult> txn =
      store_->Txn(std::move(compares), std::move(puts), {meta::Op::Get(coord)},
                  absl::Now() + options_.call_timeout);
  if (!txn.ok()) {
    spdlog::warn("coordinator: write of {} has an unknown outcome ({}); the view will tell", key,
                 Str(txn.status()));
    return WriteOutcome::kUnknown;
  }
  if (txn->succeeded) return WriteOutcome::kWritten;
  const std::vector<meta::KeyValue>& coord_kvs = txn->results.at(0).kvs;
  if (coord_kvs.empty() || coord_kvs[0].create_revision != leadership.create_revision) {
    return WriteOutcome::kLost;
  }
  spdlog::debug("coordinator: {} changed meanwhile; re-running from the next snapshot", key);
  return WriteOutcome::kConflict;
}

}  // namespace kf::streaming
