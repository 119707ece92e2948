// Client's collection calls (include/kingfisher/client.h): unary RPCs to the endpoint's
// Collections service and StreamingCoord.AllocateTimestamps.
//
// Every call waits for the channel to be ready (channel_ready.h) and then runs wait-for-ready,
// both bounded by the call's deadline: DDL calls use DdlOptions::deadline (default now +
// ddl_timeout), reads and AllocateIds now + status_timeout. A DDL is not retried once sent:
// one whose answer was lost may or may not have been applied, and only the caller knows
// whether to Describe and try again. Reads and AllocateIds change nothing a retry could
// repeat (a lost range of ids is skipped), so one that the transport failed (UNAVAILABLE
// without a server's streaming code: the server went away mid-call, e.g. a restart) is sent
// again after a backoff until the deadline. A server's own UNAVAILABLE (not the acting
// coordinator, shutting down) is answered at once.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/channel_ready.h"
#include "client/client_impl.h"
#include "client/client_internal.h"
#include "client/collection_convert.h"
#include "client/collection_rules.h"
#include "client/retry.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "grpcpp/client_context.h"
#include "kingfisher/v1/collections.grpc.pb.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "wire/status_convert.h"

namespace kingfisher {
namespace {

// AllocateIds' bounds (client.h).
constexpr uint32_t kMaxAllocateIds = 65536;

absl::Time DdlDeadline(const ClientOptions& client, const DdlOptions& options) {
  return kf::client::DeadlineOr(options.deadline, client.ddl_timeout);
}

v1::DdlOptions WireDdlOptions(const DdlOptions& options) {
  v1::DdlOptions out;
  out.set_no_wait(options.no_wait);
  if (options.trace.valid()) out.set_traceparent(options.trace.ToTraceparent());
  return out;
}

absl::Status CheckDatabase(const ClientOptions& options) {
  if (options.database.empty()) return absl::OkStatus();  // the server's "default"
  return kf::client::CheckCollectionName("database", options.database);
}

// Runs `call(channel, ctx)` once the endpoint's channel is ready, with `deadline` on the call.
// `what` prefixes errors raised here. When `ddl`, an ambiguous failure says so; otherwise a
// transport failure is sent again (see the top of the file).
template <typename Call>
absl::Status Unary(const Client::Impl& impl, absl::Time deadline, std::string_view what, bool ddl,
                   Call&& call) {
  std::shared_ptr<grpc::Channel> channel = impl.router_->endpoint_channel();
  kf::client::Backoff backoff(impl.options_.retry);
  absl::Status s;
  for (bool sent = false;; sent = true) {
    if (absl::Status ready = kf::client::AwaitChannelReady(*channel, deadline); !ready.ok()) {
      if (sent) return s;  // the last attempt's failure says more than the wait's
      return kf::WithContext(ready,
                             absl::StrCat(kf::ToAbsl(what), ": endpoint ", impl.options_.endpoint,
                                          " unreachable, nothing was sent"));
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(deadline));
    ctx.set_wait_for_ready(true);
    s = kf::wire::FromGrpcStatus(call(channel, &ctx));
    const absl::Duration wait = backoff.Next();
    if (ddl || kf::GetStreamingCode(s) != kf::StreamingCode::kTransport ||
        absl::Now() + wait >= deadline) {
      break;
    }
    absl::SleepFor(wait);
  }
  if (s.code() == absl::StatusCode::kUnimplemented) {  // gRPC's own answer says nothing
    return kf::WithContext(
        s, absl::StrCat(kf::ToAbsl(what), ": not served by ", impl.options_.endpoint));
  }
  if (ddl && kf::IsAmbiguous(s)) {
    return kf::WithContext(
        s,
        absl::StrCat(kf::ToAbsl(what), ": outcome unknown, it may or may not have been applied"));
  }
  return s;
}

}  // namespace

absl::StatusOr<CollectionInfo> Client::CreateCollection(const CollectionSpec& spec,
                                                        DdlOptions options) {
  auto metric = kf::client::CheckCollectionSpec(spec);
  if (!metric.ok()) return metric.status();
  if (absl::Status s = CheckDatabase(impl_->options_); !s.ok()) return s;
  v1::CreateCollectionRequest req;
  req.set_database(impl_->options_.database);
  req.set_name(spec.name);
  req.set_dim(spec.dim);
  req.set_metric(*metric);
  req.set_shards(spec.shards);
  *req.mutable_options() = WireDdlOptions(options);
  v1::CreateCollectionResponse resp;
  absl::Status s =
      Unary(*impl_, DdlDeadline(impl_->options_, options),
            absl::StrCat("CreateCollection '", spec.name, "'"), /*ddl=*/true,
            [&](const auto& channel, grpc::ClientContext* ctx) {
              return v1::Collections::NewStub(channel)->CreateCollection(ctx, req, &resp);
            });
  if (!s.ok()) return s;
  if (!resp.has_collection()) {
    return absl::InternalError("CreateCollection: the server answered without the collection");
  }
  return kf::client::ToCollectionInfo(resp.collection());
}

absl::Status Client::DropCollection(const std::string& name, DdlOptions options) {
  if (absl::Status s = kf::client::CheckCollectionName("collection", name); !s.ok()) return s;
  if (absl::Status s = CheckDatabase(impl_->options_); !s.ok()) return s;
  v1::DropCollectionRequest req;
  req.set_database(impl_->options_.database);
  req.set_name(name);
  *req.mutable_options() = WireDdlOptions(options);
  v1::DropCollectionResponse resp;
  return Unary(*impl_, DdlDeadline(impl_->options_, options),
               absl::StrCat("DropCollection '", name, "'"), /*ddl=*/true,
               [&](const auto& channel, grpc::ClientContext* ctx) {
                 return v1::Collections::NewStub(channel)->DropCollection(ctx, req, &resp);
               });
}

absl::StatusOr<std::vector<FlushedShard>> Client::Flush(const std::string& name,
                                                        DdlOptions options) {
  if (absl::Status s = kf::client::CheckCollectionName("collection", name); !s.ok()) return s;
  if (absl::Status s = CheckDatabase(impl_->options_); !s.ok()) return s;
  v1::FlushRequest req;
  req.set_database(impl_->options_.database);
  req.set_name(name);
  *req.mutable_options() = WireDdlOptions(options);
  v1::FlushResponse resp;
  absl::Status s =
      Unary(*impl_, DdlDeadline(impl_->options_, options), absl::StrCat("Flush '", name, "'"),
            /*ddl=*/false, [&](const auto& channel, grpc::ClientContext* ctx) {
              return v1::Collections::NewStub(channel)->Flush(ctx, req, &resp);
            });
  if (!s.ok()) return s;
  std::vector<FlushedShard> out;
  for (const v1::FlushedVChannel& f : resp.vchannels()) {
    out.push_back({.vchannel = f.vchannel(),
                   .flush_timetick = f.flush_timetick(),
                   .checkpoint_timetick = f.checkpoint_timetick()});
  }
  return out;
}

absl::StatusOr<CollectionInfo> Client::DescribeCollection(const std::string& name) {
  if (absl::Status s = kf::client::CheckCollectionName("collection", name); !s.ok()) return s;
  if (absl::Status s = CheckDatabase(impl_->options_); !s.ok()) return s;
  v1::DescribeCollectionRequest req;
  req.set_database(impl_->options_.database);
  req.set_name(name);
  v1::DescribeCollectionResponse resp;
  absl::Status s =
      Unary(*impl_, absl::Now() + kf::client::AbslDuration(impl_->options_.status_timeout),
            absl::StrCat("DescribeCollection '", name, "'"), /*ddl=*/false,
            [&](const auto& channel, grpc::ClientContext* ctx) {
              return v1::Collections::NewStub(channel)->DescribeCollection(ctx, req, &resp);
            });
  if (!s.ok()) return s;
  return kf::client::ToCollectionInfo(resp.collection());
}

absl::StatusOr<std::vector<CollectionInfo>> Client::ListCollections() {
  if (absl::Status s = CheckDatabase(impl_->options_); !s.ok()) return s;
  v1::ListCollectionsRequest req;
  req.set_database(impl_->options_.database);
  v1::ListCollectionsResponse resp;
  absl::Status s =
      Unary(*impl_, absl::Now() + kf::client::AbslDuration(impl_->options_.status_timeout),
            "ListCollections",
            /*ddl=*/false, [&](const auto& channel, grpc::ClientContext* ctx) {
              return v1::Collections::NewStub(channel)->ListCollections(ctx, req, &resp);
            });
  if (!s.ok()) return s;
  std::vector<CollectionInfo> out;
  out.reserve(resp.collections_size());
  for (const v1::CollectionInfo& c : resp.collections()) {
    out.push_back(kf::client::ToCollectionInfo(c));
  }
  return out;
}

namespace {

// Checks and builds a PartitionRequest; `drop` also refuses the default partition.
absl::StatusOr<v1::PartitionRequest> PartitionRequest(const ClientOptions& client,
                                                      const std::string& collection,
                                                      const std::string& partition,
                                                      const DdlOptions& options, bool drop) {
  if (absl::Status s = kf::client::CheckCollectionName("collection", collection); !s.ok()) {
    return s;
  }
  if (absl::Status s = kf::client::CheckCollectionName("partition", partition); !s.ok()) return s;
  if (absl::Status s = CheckDatabase(client); !s.ok()) return s;
  if (drop && partition == "_default") {
    return kf::StreamingError(kf::StreamingCode::kInvalidArgument,
                              "the default partition '_default' cannot be dropped");
  }
  v1::PartitionRequest req;
  req.set_database(client.database);
  req.set_collection(collection);
  req.set_partition(partition);
  *req.mutable_options() = WireDdlOptions(options);
  return req;
}

}  // namespace

absl::Status Client::CreatePartition(const std::string& collection, const std::string& partition,
                                     DdlOptions options) {
  auto req = PartitionRequest(impl_->options_, collection, partition, options, /*drop=*/false);
  if (!req.ok()) return req.status();
  v1::PartitionResponse resp;
  return Unary(*impl_, DdlDeadline(impl_->options_, options),
               absl::StrCat("CreatePartition '", collection, ".", partition, "'"), /*ddl=*/true,
               [&](const auto& channel, grpc::ClientContext* ctx) {
                 return v1::Collections::NewStub(channel)->CreatePartition(ctx, *req, &resp);
               });
}

absl::Status Client::DropPartition(const std::string& collection, const std::string& partition,
                                   DdlOptions options) {
  auto req = PartitionRequest(impl_->options_, collection, partition, options, /*drop=*/true);
  if (!req.ok()) return req.status();
  v1::PartitionResponse resp;
  return Unary(*impl_, DdlDeadline(impl_->options_, options),
               absl::StrCat("DropPartition '", collection, ".", partition, "'"), /*ddl=*/true,
               [&](const auto& channel, grpc::ClientContext* ctx) {
                 return v1::Collections::NewStub(channel)->DropPartition(ctx, *req, &resp);
               });
}

absl::StatusOr<std::vector<int64_t>> Client::AllocateIds(uint32_t count) {
  if (count < 1 || count > kMaxAllocateIds) {
    return kf::StreamingError(
        kf::StreamingCode::kInvalidArgument,
        absl::StrCat("AllocateIds: count ", count, " must be 1..", kMaxAllocateIds));
  }
  v1::AllocateTimestampsRequest req;
  req.set_count(count);
  v1::AllocateTimestampsResponse resp;
  absl::Status s = Unary(
      *impl_, absl::Now() + kf::client::AbslDuration(impl_->options_.status_timeout), "AllocateIds",
      /*ddl=*/false, [&](const auto& channel, grpc::ClientContext* ctx) {
        return v1::StreamingCoord::NewStub(channel)->AllocateTimestamps(ctx, req, &resp);
      });
  if (!s.ok()) return s;
  // Hybrid timestamps are ids as long as they fit an int64 pk and the range is what was asked.
  constexpr uint64_t kMaxId = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (resp.count() != count || resp.first() == 0 || resp.first() > kMaxId - (count - 1)) {
    return absl::InternalError(absl::StrCat("AllocateIds: the server answered ", resp.count(),
                                            " timestamps from ", resp.first(), " for ", count,
                                            " ids"));
  }
  std::vector<int64_t> ids(count);
  for (uint32_t i = 0; i < count; ++i) ids[i] = static_cast<int64_t>(resp.first() + i);
  return ids;
}

}  // namespace kingfisher
