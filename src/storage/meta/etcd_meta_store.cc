#include "storage/meta/etcd_meta_store.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/absl_compat.h"
#include "common/status_macros.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace kf::meta {
namespace {

namespace pb = etcdserverpb;

absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat("etcd: ", s.error_message()));
}

void SetDeadline(grpc::ClientContext* ctx, absl::Time deadline) {
  ctx->set_deadline(absl::ToChronoTime(deadline));
}

KeyValue FromPb(const mvccpb::KeyValue& kv) {
  return {.key = kv.key(),
          .value = kv.value(),
          .create_revision = kv.create_revision(),
          .mod_revision = kv.mod_revision(),
          .version = kv.version(),
          .lease = kv.lease()};
}

// [key, range_end) of a prefix; "" means every key ("\0" to "\0" in etcd's convention).
void SetPrefix(std::string_view prefix, std::string* key, std::string* range_end) {
  const std::string end = PrefixEnd(prefix);
  *key = prefix.empty() ? std::string(1, '\0') : std::string(prefix);
  *range_end = end.empty() ? std::string(1, '\0') : end;
}

pb::Compare ToPb(const Compare& c) {
  pb::Compare out;
  out.set_key(c.key);
  switch (c.result) {
    case Compare::Result::kEqual:
      out.set_result(pb::Compare::EQUAL);
      break;
    case Compare::Result::kNotEqual:
      out.set_result(pb::Compare::NOT_EQUAL);
      break;
    case Compare::Result::kLess:
      out.set_result(pb::Compare::LESS);
      break;
    case Compare::Result::kGreater:
      out.set_result(pb::Compare::GREATER);
      break;
  }
  switch (c.target) {
    case Compare::Target::kValue:
      out.set_target(pb::Compare::VALUE);
      out.set_value(c.value);
      break;
    case Compare::Target::kVersion:
      out.set_target(pb::Compare::VERSION);
      out.set_version(c.number);
      break;
    case Compare::Target::kCreateRevision:
      out.set_target(pb::Compare::CREATE);
      out.set_create_revision(c.number);
      break;
    case Compare::Target::kModRevision:
      out.set_target(pb::Compare::MOD);
      out.set_mod_revision(c.number);
      break;
  }
  return out;
}

pb::RequestOp ToPb(const Op& op) {
  pb::RequestOp out;
  switch (op.type) {
    case Op::Type::kGet: {
      auto* r = out.mutable_request_range();
      if (op.prefix) {
        SetPrefix(op.key, r->mutable_key(), r->mutable_range_end());
      } else {
        r->set_key(op.key);
      }
      break;
    }
    case Op::Type::kPut: {
      auto* r = out.mutable_request_put();
      r->set_key(op.key);
      r->set_value(op.value);
      r->set_lease(op.lease);
      break;
    }
    case Op::Type::kDelete: {
      auto* r = out.mutable_request_delete_range();
      if (op.prefix) {
        SetPrefix(op.key, r->mutable_key(), r->mutable_range_end());
      } else {
        r->set_key(op.key);
      }
      break;
    }
  }
  return out;
}

// `endpoint` without its scheme; `*tls` tells whether it was https.
std::string StripScheme(std::string endpoint, bool* tls) {
  constexpr std::string_view kHttp = "http://";
  constexpr std::string_view kHttps = "https://";
  *tls = endpoint.rfind(kHttps, 0) == 0;
  if (*tls) endpoint.erase(0, kHttps.size());
  if (endpoint.rfind(kHttp, 0) == 0) endpoint.erase(0, kHttp.size());
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  return endpoint;
}

}  // namespace

struct EtcdMetaStore::Channels {
  struct Endpoint {
    std::string address;
    std::unique_ptr<pb::KV::Stub> kv;
    std::unique_ptr<pb::Lease::Stub> lease;
    std::unique_ptr<pb::Watch::Stub> watch;
  };
  std::vector<Endpoint> endpoints;
  std::atomic<size_t> current{0};

  size_t Current() const { return current.load() % endpoints.size(); }
  // Moves on from `failed` (unless another caller already did).
  void Advance(size_t failed) {
    size_t expected = failed;
    current.compare_exchange_strong(expected, (failed + 1) % endpoints.size());
  }
};

std::vector<std::string> EtcdMetaStore::ParseEndpoints(std::string_view list) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(ToAbsl(list), ',', absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(part));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<EtcdMetaStore>> EtcdMetaStore::Create(Options options) {
  if (options.endpoints.empty()) return absl::InvalidArgumentError("etcd: no endpoints");
  auto channels = std::make_shared<Channels>();
  for (const std::string& endpoint : options.endpoints) {
    grpc::ChannelArguments args;
    // Reconnect quickly after an etcd restart (gRPC's default backoff grows to 120 s).
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    args.SetMaxReceiveMessageSize(64 << 20);
    // After every address failed, gRPC 1.51's pick_first waits for a re-resolution before it
    // connects again, and the DNS resolver allows one only every 30 s by default: an etcd
    // restart then went unnoticed for ~10 s. Loopback/host names resolve cheaply.
    args.SetInt("grpc.dns_min_time_between_resolutions_ms", 100);
    // Notice a silently dead peer (no RST) on long-lived watch streams. etcd rejects pings
    // more often than every 5 s (--grpc-keepalive-min-time).
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
    bool tls = false;
    Channels::Endpoint e{.address = StripScheme(endpoint, &tls)};
    std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
    if (tls) {
      credentials = options.tls_credentials != nullptr
                        ? options.tls_credentials
                        : grpc::SslCredentials(grpc::SslCredentialsOptions());
    }
    auto channel = grpc::CreateCustomChannel(e.address, credentials, args);
    e.kv = pb::KV::NewStub(channel);
    e.lease = pb::Lease::NewStub(channel);
    e.watch = pb::Watch::NewStub(channel);
    channels->endpoints.push_back(std::move(e));
  }
  return std::unique_ptr<EtcdMetaStore>(new EtcdMetaStore(std::move(options), channels));
}

EtcdMetaStore::EtcdMetaStore(Options options, std::shared_ptr<Channels> channels)
    : options_(std::move(options)), channels_(std::move(channels)) {}

EtcdMetaStore::~EtcdMetaStore() = default;

std::string EtcdMetaStore::current_endpoint() const {
  return channels_->endpoints[channels_->Current()].address;
}

template <typename Call>
absl::Status EtcdMetaStore::Invoke(bool retry, absl::Time deadline, Call call) {
  const size_t attempts = retry ? channels_->endpoints.size() : 1;
  absl::Status status;
  for (size_t i = 0; i < attempts; ++i) {
    if (i > 0 && absl::Now() >= deadline) break;
    const size_t index = channels_->Current();
    grpc::ClientContext ctx;
    SetDeadline(&ctx, deadline);
    status = FromGrpc(call(channels_->endpoints[index], &ctx));
    if (!absl::IsUnavailable(status)) return status;
    channels_->Advance(index);
  }
  return status;
}

absl::StatusOr<GetResult> EtcdMetaStore::Get(std::string_view key, absl::Time deadline) {
  if (key.empty()) return absl::InvalidArgumentError("etcd: empty key");
  pb::RangeRequest req;
  req.set_key(std::string(key));
  pb::RangeResponse resp;
  RETURN_IF_ERROR(Invoke(true, deadline, [&](auto& e, grpc::ClientContext* ctx) {
    return e.kv->Range(ctx, req, &resp);
  }));
  if (resp.kvs_size() == 0) {
    return absl::NotFoundError(absl::StrCat("key '", ToAbsl(key), "' not found"));
  }
  return GetResult{.kv = FromPb(resp.kvs(0)), .revision = resp.header().revision()};
}

absl::StatusOr<RangeResult> EtcdMetaStore::Range(std::string_view prefix, absl::Time deadline,
                                                 int64_t limit) {
  if (limit < 0) return absl::InvalidArgumentError("etcd: negative limit");
  pb::RangeRequest req;
  SetPrefix(prefix, req.mutable_key(), req.mutable_range_end());
  req.set_limit(limit);
  pb::RangeResponse resp;
  RETURN_IF_ERROR(Invoke(true, deadline, [&](auto& e, grpc::ClientContext* ctx) {
    return e.kv->Range(ctx, req, &resp);
  }));
  RangeResult out{.more = resp.more(), .revision = resp.header().revision()};
  out.kvs.reserve(resp.kvs_size());
  for (const auto& kv : resp.kvs()) out.kvs.push_back(FromPb(kv));
  return out;
}

absl::StatusOr<int64_t> EtcdMetaStore::Put(std::string_view key, std::string_view value,
                                           absl::Time deadline, LeaseId lease) {
  pb::PutRequest req;
  req.set_key(std::string(key));
  req.set_value(std::string(value));
  req.set_lease(lease);
  pb::PutResponse resp;
  RETURN_IF_ERROR(Invoke(false, deadline, [&](auto& e, grpc::ClientContext* ctx) {
    return e.kv->Put(ctx, req, &resp);
  }));
  return resp.header().revision();
}

absl::StatusOr<DeleteResult> EtcdMetaStore::Delete(std::string_view key, absl::Time deadline) {
  if (key.empty()) return absl::InvalidArgumentError("etcd: empty key");
  pb::DeleteRangeRequest req;
  req.set_key(std::string(key));
  pb::DeleteRangeResponse resp;
  RETURN_IF_ERROR(Invoke(false, deadline, [&](auto& e, grpc::ClientContext* ctx) {
    return e.kv->DeleteRange(ctx, req, &resp);
  }));
  return DeleteResult{.deleted = resp.deleted(), .revision = resp.header().revision()};
}

absl::StatusOr<DeleteResult> EtcdMetaStore::DeletePrefix(std::string_view prefix,
                                                         absl::Time deadline) {
  pb::DeleteRangeRequest req;
  SetPrefix(prefix, req.mutable_key(), req.mutable_range_end());
  pb::DeleteRangeResponse resp;
  RETURN_IF_ERROR(Invoke(false, deadline, [&](auto& e, grpc::ClientContext* ctx) {
    return e.kv->DeleteRange(ctx, req, &resp);
  }));
  return DeleteResult{.deleted = resp.deleted(), .revision = resp.header().revision()};
}

absl::StatusOr<TxnResult> EtcdMetaStore::Txn(const std::vector<Compare>& compares,
                                             const std::vector<Op>& then_ops,
                                             const std::vector<Op>& else_ops, absl::Time deadline) {
  pb::TxnRequest req;
  for (const Compare& c : compares) *req.add_compare() = ToPb(c);
  for (const Op& op : then_ops) *req.add_success() = ToPb(op);
  for (const Op& op : else_ops) *req.add_failure() = ToPb(op);
  const bool read_only = std::none_of(then_ops.begin(), then_ops.end(),
                                      [](const Op& op) { return op.type != Op::Type::kGet; }) &&
                         std::none_of(else_ops.begin(), else_ops.end(),
                                      [](const Op& op) { return op.type != Op::Type::kGet; });
  pb::TxnResponse resp;
  RETURN_IF_ERROR(Invoke(read_only, deadline, [&](auto& e, grpc::ClientContext* ctx) {
    return e.kv->Txn(ctx, req, &resp);
  }));
  TxnResult out{.succeeded = resp.succeeded(), .revision = resp.header().revision()};
  for (const pb::ResponseOp& r : resp.responses()) {
    OpResult& result = out.results.emplace_back();
    if (r.has_response_range()) {
      for (const auto& kv : r.response_range().kvs()) result.kvs.push_back(FromPb(kv));
    } else if (r.has_response_delete_range()) {
      result.deleted = r.response_delete_range().deleted();
    }
  }
  return out;
}

absl::StatusOr<LeaseGrant> EtcdMetaStore::GrantLease(absl::Duration ttl, absl::Time deadline) {
  const int64_t seconds = absl::ToInt64Seconds(absl::Ceil(ttl, absl::Seconds(1)));
  if (seconds <= 0) return absl::InvalidArgumentError("etcd: lease ttl must be > 0");
  pb::LeaseGrantRequest req;
  req.set_ttl(seconds);
  pb::LeaseGrantResponse resp;
  RETURN_IF_ERROR(Invoke(false, deadline, [&](auto& e, grpc::ClientContext* ctx) {
    return e.lease->LeaseGrant(ctx, req, &resp);
  }));
  if (!resp.error().empty()) return absl::InternalError(absl::StrCat("etcd: ", resp.error()));
  return LeaseGrant{.id = resp.id(), .ttl = absl::Seconds(resp.ttl())};
}

absl::StatusOr<absl::Duration> EtcdMetaStore::KeepAliveOnce(LeaseId lease, absl::Time deadline) {
  pb::LeaseKeepAliveRequest req;
  req.set_id(lease);
  pb::LeaseKeepAliveResponse resp;
  RETURN_IF_ERROR(Invoke(true, deadline, [&](auto& e, grpc::ClientContext* ctx) {
    auto stream = e.lease->LeaseKeepAlive(ctx);
    if (stream->Write(req) && stream->Read(&resp)) {
      ctx->TryCancel();  // got the one answer needed; do not wait for a graceful close
      stream->Finish().IgnoreError();
      return grpc::Status::OK;
    }
    return stream->Finish();
  }));
  // etcd answers an unknown or expired lease with TTL <= 0 rather than an error.
  if (resp.ttl() <= 0) return absl::NotFoundError(absl::StrCat("etcd: lease ", lease, " expired"));
  return absl::Seconds(resp.ttl());
}

absl::Status EtcdMetaStore::RevokeLease(LeaseId lease, absl::Time deadline) {
  pb::LeaseRevokeRequest req;
  req.set_id(lease);
  pb::LeaseRevokeResponse resp;
  return Invoke(false, deadline, [&](auto& e, grpc::ClientContext* ctx) {
    return e.lease->LeaseRevoke(ctx, req, &resp);
  });
}

absl::Status EtcdMetaStore::Compact(int64_t revision, absl::Time deadline) {
  pb::CompactionRequest req;
  req.set_revision(revision);
  pb::CompactionResponse resp;
  // Not retried: a repeat of an applied compaction answers OUT_OF_RANGE ("already compacted").
  return Invoke(false, deadline,
                [&](auto& e, grpc::ClientContext* ctx) { return e.kv->Compact(ctx, req, &resp); });
}

// One watch: a thread that keeps a Watch stream open from `next_revision_` and re-creates it
// after a break. State shared with the handle (cancellation) lives here; the thread owns a
// reference, so a handle destroyed from inside the callback can detach it safely.
class EtcdMetaStore::WatchStream final : public WatchHandle {
 public:
  struct State {
    absl::Mutex mu;
    bool cancelled ABSL_GUARDED_BY(mu) = false;
    grpc::ClientContext* ctx ABSL_GUARDED_BY(mu) = nullptr;  // the live stream's context
  };

  WatchStream(std::shared_ptr<Channels> channels, Options options, std::string prefix,
              int64_t start_revision, WatchCallback callback)
      : state_(std::make_shared<State>()) {
    thread_ = std::thread([state = state_, channels = std::move(channels),
                           options = std::move(options), prefix = std::move(prefix),
                           next = start_revision, callback = std::move(callback)]() mutable {
      Run(*state, *channels, options, prefix, next, callback);
    });
  }

  ~WatchStream() override {
    {
      absl::MutexLock l(&state_->mu);
      state_->cancelled = true;
      if (state_->ctx != nullptr) state_->ctx->TryCancel();
    }
    // From inside the callback the thread is this one: let it finish on its own (it checks
    // `cancelled` before touching anything else).
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }

 private:
  static bool Cancelled(State& state) {
    absl::MutexLock l(&state.mu);
    return state.cancelled;
  }

  static void Run(State& state, Channels& channels, const Options& options,
                  const std::string& prefix, int64_t next, const WatchCallback& callback) {
    absl::Duration backoff = options.watch_backoff_initial;
    while (true) {
      const size_t index = channels.Current();
      grpc::ClientContext ctx;
      {
        absl::MutexLock l(&state.mu);
        if (state.cancelled) return;
        state.ctx = &ctx;
      }
      auto stream = channels.endpoints[index].watch->Watch(&ctx);
      pb::WatchRequest req;
      auto* create = req.mutable_create_request();
      SetPrefix(prefix, create->mutable_key(), create->mutable_range_end());
      create->set_start_revision(next);
      pb::WatchResponse resp;
      bool terminal = false;
      if (stream->Write(req)) {
        while (!terminal && stream->Read(&resp)) {
          backoff = options.watch_backoff_initial;  // the stream works again
          if (resp.compact_revision() > 0 || resp.canceled()) {
            WatchResponse out;
            out.compact_revision = resp.compact_revision();
            out.status = resp.compact_revision() > 0
                             ? absl::OutOfRangeError(absl::StrCat("etcd: watch revision ", next,
                                                                  " compacted (compact revision ",
                                                                  resp.compact_revision(), ")"))
                             : absl::InternalError(
                                   absl::StrCat("etcd: watch canceled: ", resp.cancel_reason()));
            callback(out);
            terminal = true;
            break;
          }
          if (resp.events_size() == 0) continue;  // created / progress notifications
          WatchResponse out;
          for (const mvccpb::Event& e : resp.events()) {
            out.events.push_back({.type = e.type() == mvccpb::Event::DELETE
                                              ? WatchEvent::Type::kDelete
                                              : WatchEvent::Type::kPut,
                                  .kv = FromPb(e.kv())});
          }
          // etcd never splits one revision's events across responses (we ask for no
          // fragmenting), so resuming after the last one loses and repeats nothing.
          next = out.events.back().kv.mod_revision + 1;
          callback(out);
          if (Cancelled(state)) break;
        }
      }
      ctx.TryCancel();
      stream->Finish().IgnoreError();
      {
        absl::MutexLock l(&state.mu);
        state.ctx = nullptr;
        if (state.cancelled || terminal) return;
        channels.Advance(index);
        // Interruptible backoff: a cancel wakes it.
        state.mu.AwaitWithTimeout(absl::Condition(&state.cancelled), backoff);
        if (state.cancelled) return;
      }
      backoff = std::min(backoff * 2, options.watch_backoff_max);
    }
  }

  std::shared_ptr<State> state_;
  std::thread thread_;
};

absl::StatusOr<std::unique_ptr<WatchHandle>> EtcdMetaStore::Watch(std::string_view prefix,
                                                                  int64_t start_revision,
                                                                  WatchCallback callback,
                                                                  absl::Time deadline) {
  if (start_revision < 0) return absl::InvalidArgumentError("etcd: negative revision");
  // Pin "now" to a revision with one read, so a stream that breaks before etcd confirms the
  // watch resumes at a definite revision; it also reports an unreachable etcd here.
  pb::RangeRequest req;
  req.set_key(prefix.empty() ? std::string(1, '\0') : std::string(prefix));
  req.set_count_only(true);
  pb::RangeResponse resp;
  RETURN_IF_ERROR(Invoke(true, deadline, [&](auto& e, grpc::ClientContext* ctx) {
    return e.kv->Range(ctx, req, &resp);
  }));
  if (start_revision == 0) start_revision = resp.header().revision() + 1;
  return std::unique_ptr<WatchHandle>(new WatchStream(channels_, options_, std::string(prefix),
                                                      start_revision, std::move(callback)));
}

}  // namespace kf::meta
