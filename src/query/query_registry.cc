#include "query/query_registry.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "common/hybrid_time.h"
#include "common/process_memory.h"
#include "message/vchannel_name.h"
#include "spdlog/spdlog.h"
#include "trace/traceparent.h"
#include "trace/tracer.h"

namespace kf::query {
namespace {

using kingfisher::v1::ConsistencyLevel;

absl::Status Invalid(std::string_view what) {
  return StreamingError(StreamingCode::kInvalidArgument, what);
}

}  // namespace

MemoryPressure PressureOf(size_t growing, size_t growing_limit, size_t anonymous,
                          size_t memory_limit) {
  // A fraction of a limit, in tenths (0: no limit, never reached).
  const auto at = [](size_t used, size_t limit, size_t tenths) {
    return limit != 0 && used >= limit / 10 * tenths;
  };
  if (at(growing, growing_limit, 7) || at(anonymous, memory_limit, 7)) return MemoryPressure::kHigh;
  if (at(growing, growing_limit, 5) || at(anonymous, memory_limit, 5)) {
    return MemoryPressure::kEasing;
  }
  return MemoryPressure::kLow;
}

namespace {

QueryRegistryOptions WithDefaults(QueryRegistryOptions options) {
  if (options.shard.account == nullptr) {
    options.shard.account = std::make_shared<search::MemoryAccount>();
  }
  if (options.memory_limit != 0 && options.resident_bytes == nullptr) {
    options.resident_bytes = [resident = std::make_shared<AnonymousMemory>()] {
      return resident->bytes();
    };
  }
  if (options.shard.memory_pressure == nullptr) {
    options.shard.memory_pressure =
        [account = options.shard.account, growing_limit = options.growing_memory_limit,
         memory_limit = options.memory_limit, resident = options.resident_bytes] {
          return PressureOf(account->bytes(), growing_limit, memory_limit == 0 ? 0 : resident(),
                            memory_limit);
        };
  }
  return options;
}

// The server span of one shard call, a child of the request's traceparent (a root without).
std::shared_ptr<trace::Span> StartShardSpan(std::string_view traceparent, std::string_view name,
                                            std::string_view vchannel,
                                            kingfisher::v1::ConsistencyLevel consistency) {
  trace::Context parent;
  if (auto sc = trace::ParseTraceparent(traceparent)) parent = parent.WithRemoteParent(*sc);
  return trace::GetTracerProvider()
      ->GetTracer(trace::kSearchTracerScope)
      ->StartSpan(parent, name, trace::SpanKind::kServer,
                  {{"vchannel", std::string(vchannel)},
                   {"search.consistency", kingfisher::v1::ConsistencyLevel_Name(consistency)}})
      .second;
}

// Ends `span` with the call's outcome.
template <typename Response>
absl::StatusOr<Response> Finish(trace::Span& span, absl::StatusOr<Response> out) {
  if (out.ok()) {
    span.SetAttribute("search.timestamp", static_cast<int64_t>(out->timestamp()));
  } else {
    span.RecordError(out.status());
  }
  span.End();
  return out;
}

}  // namespace

QueryRegistry::QueryRegistry(QueryRegistryOptions options)
    : options_(WithDefaults(std::move(options))) {
  if (options_.recovery.has_value()) starter_ = std::thread([this] { RunStarter(); });
}

void QueryRegistry::RunStarter() {
  for (;;) {
    std::string pchannel;
    std::vector<std::shared_ptr<CheckpointPrefetch>> dropped;  // joined outside the lock
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !to_start_.empty() || !dropped_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      dropped.swap(dropped_);
      if (!to_start_.empty()) {
        pchannel = std::move(to_start_.front());
        to_start_.pop_front();
      }
    }
    dropped.clear();
    if (!pchannel.empty()) (void)FollowerOf(pchannel);  // a failure is logged, kept for Stats
  }
}

absl::Status QueryRegistry::AdmitInsert() const {
  constexpr double kMiB = 1 << 20;
  const size_t limit = options_.growing_memory_limit;
  const size_t used = growing_bytes();
  if (limit != 0 && used >= limit) {
    return StreamingError(
        StreamingCode::kRateLimited,
        absl::StrFormat("inserts refused: this node holds %.1f MiB of growing data, its "
                        "growing_memory_limit is %.1f MiB (raise the limit, or drop or release "
                        "collections; docs/search.md)",
                        static_cast<double>(used) / kMiB, static_cast<double>(limit) / kMiB));
  }
  if (options_.memory_limit != 0) {
    const size_t resident = options_.resident_bytes();
    if (resident >= MemoryHighWater(options_.memory_limit)) {
      return StreamingError(
          StreamingCode::kRateLimited,
          absl::StrFormat("inserts refused: this process uses %.1f MiB of memory, 90%% of its "
                          "memory_limit of %.1f MiB (raise the limit, or drop or release "
                          "collections; docs/search.md)",
                          static_cast<double>(resident) / kMiB,
                          static_cast<double>(options_.memory_limit) / kMiB));
    }
  }
  return absl::OkStatus();
}

QueryRegistry::~QueryRegistry() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (starter_.joinable()) starter_.join();
  std::map<std::string, std::shared_ptr<CheckpointPrefetch>, std::less<>> prefetches;
  std::vector<std::shared_ptr<CheckpointPrefetch>> dropped;
  absl::MutexLock lock(&mu_);
  followers_.clear();
  prefetches.swap(prefetches_);  // stopped outside the lock
  dropped.swap(dropped_);
}

void QueryRegistry::Follow(std::shared_ptr<wal::Wal> wal) {
  const std::string pchannel = wal->pchannel();
  {
    Followed old;  // stopped outside the lock
    absl::MutexLock lock(&mu_);
    Followed& slot = followers_[pchannel];
    old = std::exchange(slot, Followed{.wal = std::move(wal)});
    // With recovery storage every pchannel seals, flushes, checkpoints and truncates its log
    // whether searched or not: its follower starts now, on the starter thread, so the WAL is
    // served while the checkpoint loads (searches wait for it; a failure is logged, shown by
    // Stats and tried again at the next search).
    if (options_.recovery.has_value()) to_start_.push_back(pchannel);
  }
}

void QueryRegistry::Unfollow(std::string_view pchannel) {
  Followed old;  // stopped outside the lock
  absl::MutexLock lock(&mu_);
  if (auto it = followers_.find(pchannel); it != followers_.end()) {
    old = std::move(it->second);
    followers_.erase(it);
  }
}

void QueryRegistry::Prefetch(std::string_view pchannel) {
  if (!options_.recovery.has_value()) return;
  absl::MutexLock lock(&mu_);
  if (stopping_ || prefetches_.contains(pchannel)) return;
  prefetches_.emplace(std::string(pchannel),
                      std::make_shared<CheckpointPrefetch>(*options_.recovery,
                                                           std::string(pchannel), options_.shard));
}

void QueryRegistry::DropPrefetch(std::string_view pchannel) {
  absl::MutexLock lock(&mu_);
  if (auto it = prefetches_.find(pchannel); it != prefetches_.end()) {
    // Joined on the starter thread: the caller (the node's reconciling) must not wait for a
    // segment read in progress.
    it->second->Cancel();
    dropped_.push_back(std::move(it->second));
    prefetches_.erase(it);
  }
}

absl::StatusOr<std::shared_ptr<const ChannelFollower>> QueryRegistry::FollowerOf(
    std::string_view pchannel) const {
  auto not_served = [&] {
    return StreamingError(StreamingCode::kChannelNotExist,
                          absl::StrCat(ToAbsl(pchannel), " is not served by this node"));
  };
  std::shared_ptr<wal::Wal> wal;
  std::shared_ptr<absl::Mutex> starting;
  std::shared_ptr<CheckpointPrefetch> prefetch;  // declared first: released outside mu_
  {
    absl::MutexLock lock(&mu_);
    auto it = followers_.find(pchannel);
    if (it == followers_.end()) return not_served();
    if (it->second.follower != nullptr) return it->second.follower;
    wal = it->second.wal;
    starting = it->second.starting;
  }
  // One start at a time per pchannel, outside mu_: loading a checkpoint reads every flushed
  // segment, and searches, stats and other pchannels must not wait for it.
  absl::MutexLock start(starting.get());
  {
    absl::MutexLock lock(&mu_);
    auto it = followers_.find(pchannel);
    if (it == followers_.end() || it->second.wal != wal) return not_served();
    if (it->second.follower != nullptr) return it->second.follower;  // started meanwhile
    if (auto p = prefetches_.find(pchannel); p != prefetches_.end()) prefetch = p->second;
  }
  // A restarting node may open a pchannel at its old term and, a moment later, at the term the
  // coordinator assigns: the first load stops there instead of delaying the second.
  const auto replaced = [&] {
    absl::MutexLock lock(&mu_);
    auto it = followers_.find(pchannel);
    return it == followers_.end() || it->second.wal != wal;
  };
  absl::StatusOr<std::unique_ptr<ChannelFollower>> started = ChannelFollower::Start(
      wal, options_.shard, absl::Milliseconds(50),
      options_.recovery ? &*options_.recovery : nullptr, replaced, prefetch.get());
  absl::MutexLock lock(&mu_);  // released before `started` goes, if it is not installed
  if (prefetch != nullptr && prefetch->settled()) {
    if (auto p = prefetches_.find(pchannel); p != prefetches_.end() && p->second == prefetch) {
      prefetches_.erase(p);
    }
  }
  auto it = followers_.find(pchannel);
  if (it == followers_.end() || it->second.wal != wal) return not_served();  // closed meanwhile
  if (!started.ok()) {
    // E.g. a corrupt segment object (DATA_LOSS): every search of the pchannel fails with it
    // (and tries again) until an operator repairs the store; nothing is served half-loaded.
    spdlog::error("query: cannot follow {}: {}", it->first, started.status().ToString());
    it->second.start_error = WithContext(started.status(), absl::StrCat("recovering ", it->first));
    return it->second.start_error;
  }
  it->second.start_error = absl::OkStatus();
  it->second.follower = *std::move(started);
  return it->second.follower;
}

std::optional<double> QueryRegistry::PChannelStats::checkpoint_lag_seconds() const {
  const uint64_t from = checkpoint_ts();
  if (tsafe == 0 || from == 0) return std::nullopt;
  const double lag_ms = static_cast<double>(PhysicalMs(TimeTick(tsafe))) -
                        static_cast<double>(PhysicalMs(TimeTick(from)));
  return std::max(0.0, lag_ms / 1000);
}

std::vector<QueryRegistry::PChannelStats> QueryRegistry::Stats() const {
  struct Entry {
    std::string name;
    std::shared_ptr<ChannelFollower> follower;
    absl::Status start_error;
  };
  std::vector<Entry> followed;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, f] : followers_) followed.push_back({name, f.follower, f.start_error});
  }
  std::vector<PChannelStats> out;
  for (const auto& [name, f, start_error] : followed) {
    if (f == nullptr) {
      PChannelStats& p = out.emplace_back(PChannelStats{.pchannel = name});
      p.checkpoint.last_error = start_error;
      continue;
    }
    const ChannelApplier& a = f->applier();
    PChannelStats& p = out.emplace_back(PChannelStats{.pchannel = name,
                                                      .growing_bytes = a.memory_bytes(),
                                                      .growing_rows = a.rows(),
                                                      .tsafe = a.tsafe(),
                                                      .checkpoint = f->checkpoint_stats()});
    for (const auto& shard : a.shards()) {
      p.shards.push_back({.vchannel = shard->vchannel(),
                          .collection_id = shard->schema().collection_id,
                          .rows = shard->rows(),
                          .memory_bytes = shard->memory_bytes() + shard->index_bytes(),
                          .sealed_segments = shard->sealed_segments(),
                          .flushed_segments = shard->flushed_segments()});
    }
    std::sort(p.shards.begin(), p.shards.end(),
              [](const ShardStats& x, const ShardStats& y) { return x.vchannel < y.vchannel; });
  }
  return out;
}

std::vector<QueryRegistry::CollectionStats> QueryRegistry::CollectionsStats() const {
  std::vector<std::shared_ptr<ChannelFollower>> followed;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, f] : followers_) {
      if (f.follower != nullptr) followed.push_back(f.follower);
    }
  }
  std::map<int64_t, CollectionStats> by_id;
  for (const auto& f : followed) {
    for (const auto& shard : f->applier().shards()) {
      CollectionStats& c = by_id[shard->schema().collection_id];
      c.collection_id = shard->schema().collection_id;
      c.growing_bytes += shard->memory_bytes();
      c.index_bytes += shard->index_bytes();
      c.sealed_segments += shard->sealed_segments();
      c.flushed_segments += shard->flushed_segments();
    }
  }
  std::vector<CollectionStats> out;
  for (auto& [id, c] : by_id) out.push_back(c);
  return out;
}

absl::StatusOr<QueryRegistry::Resolved> QueryRegistry::Resolve(
    std::string_view vchannel, ConsistencyLevel consistency, uint64_t timestamp,
    uint64_t staleness_ms, absl::Time deadline, trace::Span& span) const {
  absl::StatusOr<std::optional<CollectionVChannel>> parsed = ParseVChannel(vchannel);
  if (!parsed.ok()) return parsed.status();
  if (!parsed->has_value()) {
    return Invalid(absl::StrCat(ToAbsl(vchannel), " is not a collection's vchannel"));
  }
  absl::StatusOr<std::string> pchannel = PChannelOfVChannel(vchannel);
  if (!pchannel.ok()) return pchannel.status();
  Resolved out;
  absl::StatusOr<std::shared_ptr<const ChannelFollower>> follower = FollowerOf(*pchannel);
  if (!follower.ok()) return follower.status();
  out.follower = *std::move(follower);
  const ChannelApplier& applier = out.follower->applier();
  if (timestamp != 0) {
    // A T far in the future (a unit mistake, say nanoseconds) would only wait for its
    // deadline: refused at once. Legitimate timestamps run ahead of the clock by a few seconds
    // at most (the oracle resumes above its persisted window after a restart).
    constexpr uint64_t kSkewMs = 3'600'000;
    const uint64_t physical = PhysicalMs(TimeTick(timestamp));
    const auto now_ms = static_cast<uint64_t>(absl::ToUnixMillis(absl::Now()));
    if (physical > now_ms + kSkewMs) {
      return Invalid(absl::StrCat("timestamp ", timestamp, " is ", physical - now_ms,
                                  " ms in the future (a timetick is unix ms << 18 | logical)"));
    }
    out.ts = timestamp;
  } else {
    switch (consistency) {
      case kingfisher::v1::STRONG: {
        if (options_.tso == nullptr) return absl::InternalError("no timestamp source");
        absl::StatusOr<TimeTick> fresh = options_.tso->Allocate(1);
        if (!fresh.ok()) return fresh.status();
        out.ts = fresh->value();
        break;
      }
      case kingfisher::v1::CONSISTENCY_UNSPECIFIED:
      case kingfisher::v1::BOUNDED: {
        const uint64_t staleness = staleness_ms == 0 ? 1000 : staleness_ms;
        const auto now_ms = static_cast<uint64_t>(absl::ToUnixMillis(absl::Now()));
        out.ts = ComposeTimeTick(now_ms > staleness ? now_ms - staleness : 0, 0).value();
        break;
      }
      case kingfisher::v1::EVENTUALLY:
        out.ts = applier.tsafe();
        break;
      case kingfisher::v1::SESSION:
        return Invalid("a SESSION call carries the client's last write as its timestamp");
      default:
        return Invalid(absl::StrCat("unknown consistency level ", static_cast<int>(consistency)));
    }
  }
  // Wait for the shard to apply T, asking for TimeTicks meanwhile.
  constexpr absl::Duration kRetick = absl::Milliseconds(5);
  const absl::Time wait_start = absl::Now();
  const auto record_wait = [&] {
    span.AddEvent("tsafe.wait",
                  {{"search.timestamp", static_cast<int64_t>(out.ts)},
                   {"tsafe", static_cast<int64_t>(applier.tsafe())},
                   {"wait.ms", absl::ToDoubleMilliseconds(absl::Now() - wait_start)}});
  };
  // A fresh T (this call's, or another shard's of the same search) lies above every batch of
  // timeticks fetched before it, this node's too: the node's next TimeTick must come from a
  // newer batch to reach it.
  if (options_.before_wait && applier.tsafe() < out.ts) options_.before_wait(TimeTick(out.ts));
  while (applier.tsafe() < out.ts) {
    if (absl::Status s = out.follower->status(); !s.ok()) {
      return StreamingError(StreamingCode::kChannelNotExist,
                            absl::StrCat(*pchannel, " stopped applying: ", s.message()));
    }
    out.follower->Want(out.ts);
    out.follower->wal().RequestTimeTick();
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      record_wait();
      return absl::DeadlineExceededError(absl::StrCat(ToAbsl(vchannel), " has applied up to ",
                                                      applier.tsafe(),
                                                      ", not yet the search's timestamp ", out.ts));
    }
    applier.AwaitTSafe(out.ts, std::min(deadline, now + kRetick));
  }
  record_wait();
  out.shard = applier.shard(vchannel);
  if (out.shard == nullptr) {
    return StreamingError(StreamingCode::kCollectionNotFound,
                          absl::StrCat("no collection on ", ToAbsl(vchannel), " at ", out.ts));
  }
  return out;
}

absl::StatusOr<kingfisher::v1::SearchResponse> QueryRegistry::Search(
    const kingfisher::v1::SearchRequest& r, absl::Time deadline) const {
  std::shared_ptr<trace::Span> span =
      StartShardSpan(r.traceparent(), "kf.search.shard", r.vchannel(), r.consistency());
  span->SetAttribute("search.topk", static_cast<int64_t>(r.topk()));
  return Finish(*span, SearchShard(r, deadline, *span));
}

absl::StatusOr<kingfisher::v1::GetResponse> QueryRegistry::Get(const kingfisher::v1::GetRequest& r,
                                                               absl::Time deadline) const {
  std::shared_ptr<trace::Span> span =
      StartShardSpan(r.traceparent(), "kf.get.shard", r.vchannel(), r.consistency());
  return Finish(*span, GetShard(r, deadline, *span));
}

absl::StatusOr<kingfisher::v1::SearchResponse> QueryRegistry::SearchShard(
    const kingfisher::v1::SearchRequest& r, absl::Time deadline, trace::Span& span) const {
  if (r.dim() == 0) return Invalid("dim must be > 0");
  if (r.vectors_size() == 0 || r.vectors_size() % r.dim() != 0) {
    return Invalid(
        absl::StrCat(r.vectors_size(), " components are not whole vectors of dim ", r.dim()));
  }
  for (float x : r.vectors()) {
    if (!std::isfinite(x)) return Invalid("a query vector has a NaN or infinite component");
  }
  if (r.topk() < 1 || r.topk() > kMaxTopK) {
    return Invalid(absl::StrCat("topk ", r.topk(), " is outside 1..", kMaxTopK));
  }
  search::SearchFilter filter;
  if (r.has_min_pk()) filter.min_pk = r.min_pk();
  if (r.has_max_pk()) filter.max_pk = r.max_pk();
  if (filter.min_pk > filter.max_pk) return Invalid("min_pk > max_pk");
  absl::StatusOr<Resolved> resolved =
      Resolve(r.vchannel(), r.consistency(), r.timestamp(), r.staleness_ms(), deadline, span);
  if (!resolved.ok()) return resolved.status();
  const Shard& shard = *resolved->shard;
  if (r.dim() != shard.schema().dim) {
    return Invalid(
        absl::StrCat("query dim ", r.dim(), ", the collection's is ", shard.schema().dim));
  }
  filter.ts = resolved->ts;
  std::optional<std::string> partition;
  if (!r.partition().empty()) partition = r.partition();
  kingfisher::v1::SearchResponse out;
  out.set_timestamp(resolved->ts);
  const size_t nq = static_cast<size_t>(r.vectors_size()) / r.dim();
  for (size_t q = 0; q < nq; ++q) {
    absl::StatusOr<std::vector<search::Hit>> hits =
        shard.Search(r.vectors().data() + q * r.dim(), r.topk(), r.nprobe(), filter, partition);
    if (!hits.ok()) return hits.status();
    kingfisher::v1::SearchHits* result = out.add_results();
    for (const search::Hit& h : *hits) {
      result->add_pks(h.pk);
      result->add_distances(search::DistanceOf(shard.schema().metric, h.score));
    }
  }
  return out;
}

absl::StatusOr<kingfisher::v1::GetResponse> QueryRegistry::GetShard(
    const kingfisher::v1::GetRequest& r, absl::Time deadline, trace::Span& span) const {
  if (r.pks_size() == 0) return Invalid("no pks");
  absl::StatusOr<Resolved> resolved =
      Resolve(r.vchannel(), r.consistency(), r.timestamp(), r.staleness_ms(), deadline, span);
  if (!resolved.ok()) return resolved.status();
  kingfisher::v1::GetResponse out;
  out.set_timestamp(resolved->ts);
  for (int64_t pk : r.pks()) {
    for (std::vector<float>& v : resolved->shard->Get(pk, resolved->ts)) {
      kingfisher::v1::Row* row = out.add_rows();
      row->set_pk(pk);
      row->mutable_vector()->Add(v.begin(), v.end());
    }
  }
  return out;
}

}  // namespace kf::query
