// Client::Search and Client::Get (include/kingfisher/search.h, docs/search.md): one call per
// shard to the node that owns its pchannel (Search service, search.proto), merged here.
//
// One timestamp for the whole call: the first shard resolves T from the consistency level and
// every other shard is asked at that T, in parallel, so a multi-shard search is one snapshot
// (kEventually asks each shard for what it has applied). A shard call that meets a routing error
// (CHANNEL_NOT_EXIST, UNMATCHED_CHANNEL_TERM, CHANNEL_FENCED) waits up to one backoff for a
// newer assignment and is sent again (to the same node if none came: it may still be opening
// the pchannel); a node that cannot be reached is retried with backoff, as appends are, each
// attempt bounded by ClientOptions::attempt_timeout. At the call's deadline: DEADLINE_EXCEEDED
// naming the last error.
#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/channel_ready.h"
#include "client/client_impl.h"
#include "client/client_internal.h"
#include "client/retry.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "grpcpp/client_context.h"
#include "kingfisher/v1/search.grpc.pb.h"
#include "message/vchannel_name.h"
#include "trace/public_context.h"
#include "trace/tracer.h"
#include "wire/status_convert.h"

namespace kingfisher {
namespace {

namespace v1 = ::kingfisher::v1;

absl::Status Invalid(std::string_view what) {
  return kf::StreamingError(kf::StreamingCode::kInvalidArgument, what);
}

// Sends `call(stub, ctx)` to the node serving `vchannel`'s pchannel until it is answered by
// the right node or `deadline` passes.
template <typename Call>
absl::Status OnShard(const Client::Impl& impl, const std::string& vchannel, absl::Time deadline,
                     Call&& call) {
  absl::StatusOr<std::string> pchannel = kf::PChannelOfVChannel(vchannel);
  if (!pchannel.ok()) return pchannel.status();
  kf::client::Backoff backoff(impl.options_.retry);
  int64_t stale_version = 0;  // after a routing error: the version of the route that failed
  absl::Status last = absl::UnavailableError("no node was asked");
  // Whatever was being waited for when the deadline passed, the call timed out.
  const auto timed_out = [&] {
    return absl::DeadlineExceededError(absl::StrCat("the deadline passed before shard ", vchannel,
                                                    " answered; last: ", last.ToString()));
  };
  for (;;) {
    if (absl::Now() >= deadline) return timed_out();
    // After a routing error, wait for the assignment that moved the pchannel, but only for a
    // backoff: a node that is still opening the pchannel answers CHANNEL_NOT_EXIST at the
    // current version too, and is asked again.
    absl::StatusOr<kf::client::Router::Route> route =
        stale_version == 0
            ? impl.router_->Resolve(*pchannel, 0, deadline)
            : impl.router_->Resolve(*pchannel, stale_version,
                                    std::min(deadline, absl::Now() + backoff.Next()));
    stale_version = 0;
    if (!route.ok()) {
      if (!absl::IsUnavailable(route.status())) return route.status();
      last = route.status();
      continue;  // no newer assignment yet: the current one again (or the deadline)
    }
    // Wait for the node's connection only while it still owns the pchannel: a killed node's
    // channel never gets ready, and its successor is announced by discovery.
    const absl::Time attempt_deadline =
        std::min(deadline, absl::Now() + absl::FromChrono(impl.options_.attempt_timeout));
    bool moved = false;
    absl::Status s = kf::client::AwaitChannelReady(*route->node->channel, attempt_deadline, [&] {
      moved = !impl.router_->IsCurrent(*pchannel, *route);
      return moved;
    });
    if (s.ok()) {
      grpc::ClientContext ctx;  // fail-fast: a node that dies now fails the call at once
      ctx.set_deadline(absl::ToChronoTime(attempt_deadline));
      auto stub = v1::Search::NewStub(route->node->channel);
      s = kf::wire::FromGrpcStatus(call(*stub, &ctx));
    }
    if (s.ok()) return s;
    last = s;
    if (moved || kf::client::IsRoutingError(s)) {
      if (route->version != 0) {
        stale_version = route->version;
        continue;
      }
      // A static route (an endpoint without discovery) never changes: back off, ask again.
    } else if (!absl::IsUnavailable(s) && !absl::IsDeadlineExceeded(s)) {
      return s;  // a search is read-only: only an attempt that ran out of time is sent again
    }
    absl::SleepFor(std::min(backoff.Next(), deadline - absl::Now()));  // the node is away
  }
}

v1::ConsistencyLevel WireConsistency(Consistency c) {
  switch (c) {
    case Consistency::kStrong:
      return v1::STRONG;
    case Consistency::kSession:
      return v1::SESSION;
    case Consistency::kBounded:
      return v1::BOUNDED;
    case Consistency::kEventually:
      return v1::EVENTUALLY;
  }
  return v1::CONSISTENCY_UNSPECIFIED;
}

// A session read without a timestamp reads at this client's last acknowledged write to the
// collection (session_clock.h); before any (its writes may have gone elsewhere: the collection's
// creation, another producer), it reads as strong.
template <typename Options>
Options WithSession(const Client::Impl& impl, const CollectionInfo& info, Options options) {
  if (options.consistency != Consistency::kSession || options.timestamp.value() != 0) {
    return options;
  }
  const uint64_t last = impl.session_->LastWrite(info.vchannels);
  if (last == 0) {
    options.consistency = Consistency::kStrong;
  } else {
    options.timestamp = TimeTick(last);
  }
  return options;
}

template <typename Request>
void SetRead(const ReadOptions& options, Request* r) {
  r->set_consistency(WireConsistency(options.consistency));
  r->set_timestamp(options.timestamp.value());
  r->set_staleness_ms(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(options.staleness).count()));
  if (options.trace.valid()) r->set_traceparent(options.trace.ToTraceparent());
}

// Runs `call(options)` in a client span `name` under the caller's context; the shards' spans
// are its children (the options' trace is the span's).
template <typename Result, typename Options, typename Call>
absl::StatusOr<Result> Traced(std::string_view name, const std::string& collection, Options options,
                              Call call) {
  auto [ctx, span] =
      kf::trace::GetTracerProvider()
          ->GetTracer(kf::trace::kSearchTracerScope)
          ->StartSpan(kf::trace::ContextFromPublic(options.trace), name,
                      kf::trace::SpanKind::kClient,
                      {{"collection", collection},
                       {"search.consistency", std::string(ConsistencyName(options.consistency))}});
  options.trace = kf::trace::ToPublic(span->context());
  absl::StatusOr<Result> out = call(options);
  if (out.ok()) {
    span->SetAttribute("search.timestamp", static_cast<int64_t>(out->timestamp.value()));
  } else {
    span->RecordError(out.status());
  }
  span->End();
  return out;
}

// The description of `name` from the client's cache, or from the endpoint when `fresh` or not
// cached yet; `*cached` says which.
absl::StatusOr<CollectionInfo> Describe(Client& client, const Client::Impl& impl,
                                        const std::string& name, bool fresh, bool* cached) {
  *cached = false;
  if (!fresh) {
    absl::MutexLock lock(&impl.collections_mu_);
    if (auto it = impl.collections_.find(name); it != impl.collections_.end()) {
      *cached = true;
      return it->second;
    }
  }
  absl::StatusOr<CollectionInfo> info = client.DescribeCollection(name);
  absl::MutexLock lock(&impl.collections_mu_);
  if (info.ok()) {
    impl.collections_[name] = *info;
  } else {
    impl.collections_.erase(name);
  }
  return info;
}

// Runs `call(info)` with the cached description of `name`, and once more with a fresh one if
// a shard said the collection is not there or has another dim: it was dropped (and maybe
// created again) since it was cached.
template <typename Result, typename Call>
absl::StatusOr<Result> WithCollection(Client& client, const Client::Impl& impl,
                                      const std::string& name, Call&& call) {
  bool cached = false;
  absl::StatusOr<CollectionInfo> info = Describe(client, impl, name, /*fresh=*/false, &cached);
  if (!info.ok()) return info.status();
  absl::StatusOr<Result> r = call(*info);
  if (r.ok() || !cached || !(absl::IsNotFound(r.status()) || absl::IsInvalidArgument(r.status()))) {
    return r;
  }
  info = Describe(client, impl, name, /*fresh=*/true, &cached);
  if (!info.ok()) return info.status();
  return call(*info);
}

absl::StatusOr<SearchResult> SearchShards(const Client::Impl& impl, const CollectionInfo& info,
                                          const std::vector<float>& queries,
                                          const SearchOptions& options, absl::Time deadline) {
  if (info.dim == 0 || queries.empty() || queries.size() % info.dim != 0) {
    return Invalid(absl::StrCat(queries.size(), " components are not whole query vectors of ",
                                "collection ", info.name, "'s dim ", info.dim));
  }
  v1::SearchRequest req;
  req.set_dim(info.dim);
  req.mutable_vectors()->Add(queries.begin(), queries.end());
  req.set_topk(options.topk);
  req.set_partition(options.partition);
  if (options.min_pk) req.set_min_pk(*options.min_pk);
  req.set_nprobe(options.nprobe);
  if (options.max_pk) req.set_max_pk(*options.max_pk);
  SetRead(options, &req);

  const size_t nq = queries.size() / info.dim;
  // Every shard's hits of query q, then the best topk: smaller distance first for L2, larger
  // for IP and COSINE; ties by the smaller pk (as each node orders them).
  std::vector<std::vector<SearchHit>> merged(nq);
  SearchResult out;
  // The first shard fixes T; the others are asked at it, all at once.
  const size_t shards = info.vchannels.size();
  std::vector<v1::SearchResponse> responses(shards);
  std::vector<absl::Status> statuses(shards);
  auto ask = [&](size_t i, v1::SearchRequest r) {
    r.set_vchannel(info.vchannels[i]);
    statuses[i] = OnShard(
        impl, info.vchannels[i], deadline,
        [&](auto& stub, grpc::ClientContext* ctx) { return stub.Search(ctx, r, &responses[i]); });
  };
  ask(0, req);
  if (statuses[0].ok() && shards > 1) {
    // kEventually: each shard at what it has applied.
    if (options.consistency != Consistency::kEventually) {
      req.set_timestamp(responses[0].timestamp());
    }
    std::vector<std::thread> others;
    for (size_t i = 1; i < shards; ++i) others.emplace_back(ask, i, req);
    for (std::thread& t : others) t.join();
  }
  for (size_t i = 0; i < shards; ++i) {
    const std::string& vchannel = info.vchannels[i];
    if (!statuses[i].ok()) {
      return kf::WithContext(statuses[i], absl::StrCat("search of ", info.name, " on ", vchannel));
    }
    const v1::SearchResponse& resp = responses[i];
    if (static_cast<size_t>(resp.results_size()) != nq) {
      return absl::InternalError(absl::StrCat(vchannel, " answered ", resp.results_size(),
                                              " results for ", nq, " queries"));
    }
    for (size_t q = 0; q < nq; ++q) {
      const v1::SearchHits& hits = resp.results(static_cast<int>(q));
      for (int h = 0; h < hits.pks_size() && h < hits.distances_size(); ++h) {
        merged[q].push_back({hits.pks(h), hits.distances(h)});
      }
    }
  }
  out.timestamp = TimeTick(responses[0].timestamp());
  const bool smaller_first = info.metric == "L2";
  for (auto& hits : merged) {
    std::sort(hits.begin(), hits.end(), [&](const SearchHit& a, const SearchHit& b) {
      if (a.distance != b.distance) {
        return smaller_first ? a.distance < b.distance : a.distance > b.distance;
      }
      return a.pk < b.pk;
    });
    if (hits.size() > options.topk) hits.resize(options.topk);
  }
  out.hits = std::move(merged);
  return out;
}

absl::StatusOr<GetResult> GetFromShards(const Client::Impl& impl, const CollectionInfo& info,
                                        const std::vector<int64_t>& pks, const ReadOptions& options,
                                        absl::Time deadline) {
  if (info.vchannels.empty()) return absl::InternalError("the collection has no vchannels");
  // Each pk from its own shard (ShardOfPk), the shards at one T.
  std::vector<v1::GetRequest> per_shard(info.vchannels.size());
  const auto shards = static_cast<uint32_t>(info.vchannels.size());
  for (int64_t pk : pks) per_shard[ShardOfPk(pk, shards)].add_pks(pk);
  GetResult out;
  uint64_t timestamp = options.timestamp.value();
  for (uint32_t i = 0; i < shards; ++i) {
    v1::GetRequest& req = per_shard[i];
    if (req.pks_size() == 0) continue;
    req.set_vchannel(info.vchannels[i]);
    SetRead(options, &req);
    req.set_timestamp(timestamp);
    v1::GetResponse resp;
    absl::Status s =
        OnShard(impl, info.vchannels[i], deadline,
                [&](auto& stub, grpc::ClientContext* ctx) { return stub.Get(ctx, req, &resp); });
    if (!s.ok()) {
      return kf::WithContext(s, absl::StrCat("get from ", info.name, " on ", info.vchannels[i]));
    }
    if (out.timestamp.value() == 0) {
      out.timestamp = TimeTick(resp.timestamp());
      if (options.consistency != Consistency::kEventually) timestamp = resp.timestamp();
    }
    for (const v1::Row& row : resp.rows()) {
      out.rows.push_back({row.pk(), std::vector<float>(row.vector().begin(), row.vector().end())});
    }
  }
  return out;
}

}  // namespace

std::string_view ConsistencyName(Consistency c) {
  switch (c) {
    case Consistency::kStrong:
      return "strong";
    case Consistency::kSession:
      return "session";
    case Consistency::kBounded:
      return "bounded";
    case Consistency::kEventually:
      return "eventually";
  }
  return "unknown";
}

std::optional<Consistency> ParseConsistency(std::string_view name) {
  for (Consistency c : {Consistency::kStrong, Consistency::kSession, Consistency::kBounded,
                        Consistency::kEventually}) {
    if (absl::EqualsIgnoreCase(kf::ToAbsl(name), kf::ToAbsl(ConsistencyName(c)))) return c;
  }
  return std::nullopt;
}

absl::StatusOr<SearchResult> Client::Search(const std::string& collection,
                                            const std::vector<float>& queries,
                                            const SearchOptions& options) {
  if (options.topk < 1 || options.topk > kMaxTopK) {
    return Invalid(absl::StrCat("topk ", options.topk, " is outside 1..", kMaxTopK));
  }
  if (options.min_pk && options.max_pk && *options.min_pk > *options.max_pk) {
    return Invalid("min_pk > max_pk");
  }
  for (float x : queries) {
    if (!std::isfinite(x)) return Invalid("a query vector has a NaN or infinite component");
  }
  const absl::Time deadline =
      kf::client::DeadlineOr(options.deadline, impl_->options_.status_timeout);
  return Traced<SearchResult>("kf.search", collection, options, [&](const SearchOptions& traced) {
    return WithCollection<SearchResult>(*this, *impl_, collection, [&](const CollectionInfo& info) {
      return SearchShards(*impl_, info, queries, WithSession(*impl_, info, traced), deadline);
    });
  });
}

absl::StatusOr<GetResult> Client::Get(const std::string& collection,
                                      const std::vector<int64_t>& pks, const ReadOptions& options) {
  if (pks.empty()) return Invalid("no pks to get");
  const absl::Time deadline =
      kf::client::DeadlineOr(options.deadline, impl_->options_.status_timeout);
  return Traced<GetResult>("kf.get", collection, options, [&](const ReadOptions& traced) {
    return WithCollection<GetResult>(*this, *impl_, collection, [&](const CollectionInfo& info) {
      return GetFromShards(*impl_, info, pks, WithSession(*impl_, info, traced), deadline);
    });
  });
}

}  // namespace kingfisher
