// kfctl replicate configure | status: direct calls of the ReplicateAdmin and Replicate services
// (replicate.proto), which the client library does not wrap: they are an operator's, not an
// application's.
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "kingfisher/v1/replicate.grpc.pb.h"
#include "message/replicate_config.h"
#include "wire/credentials.h"
#include "wire/status_convert.h"

namespace kf::cli {
namespace {

namespace v1 = kingfisher::v1;

struct Cluster {
  std::string id;
  std::string endpoint;
};

absl::StatusOr<Cluster> ParseCluster(const std::string& flag, const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return StreamingError(StreamingCode::kInvalidArgument,
                          absl::StrCat(flag, " ", text, ": expected ID=HOST:PORT"));
  }
  return Cluster{text.substr(0, eq), text.substr(eq + 1)};
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> ChannelTo(const Args& args,
                                                         const std::string& endpoint) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      wire::ChannelCredentials(args.tls);
  if (!credentials.ok()) return credentials.status();
  return grpc::CreateChannel(endpoint, *credentials);
}

void SetDeadline(const Args& args, grpc::ClientContext* ctx) {
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(args.timeout_seconds)));
}

absl::StatusOr<v1::GetReplicateConfigResponse> GetConfig(const Args& args,
                                                         const std::string& endpoint) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = ChannelTo(args, endpoint);
  if (!channel.ok()) return channel.status();
  auto stub = v1::ReplicateAdmin::NewStub(*channel);
  grpc::ClientContext ctx;
  SetDeadline(args, &ctx);
  v1::GetReplicateConfigResponse response;
  absl::Status s = wire::FromGrpcStatus(
      stub->GetReplicateConfig(&ctx, v1::GetReplicateConfigRequest(), &response));
  if (!s.ok()) return WithContext(s, endpoint);
  return response;
}

// Alters the configuration of the cluster at `endpoint` and prints its new role; false (the
// error printed) on failure.
bool Alter(const Args& args, const v1::ReplicateConfiguration& config, const std::string& id,
           const std::string& endpoint, std::FILE* out, std::FILE* err) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = ChannelTo(args, endpoint);
  if (!channel.ok()) {
    PrintError(err, channel.status());
    return false;
  }
  auto stub = v1::ReplicateAdmin::NewStub(*channel);
  grpc::ClientContext ctx;
  SetDeadline(args, &ctx);
  v1::AlterReplicateConfigRequest request;
  *request.mutable_config() = config;
  v1::AlterReplicateConfigResponse response;
  absl::Status s = wire::FromGrpcStatus(stub->AlterReplicateConfig(&ctx, request, &response));
  if (!s.ok()) {
    PrintError(err, WithContext(s, absl::StrCat("cluster ", id, " at ", endpoint)));
    return false;
  }
  PrintLine(out, absl::StrCat(R"({"cluster":")", id, R"(","endpoint":")", endpoint, R"(","role":")",
                              ToAbsl(ReplicateRoleName(RoleOf(config, id).kind)), R"("})"));
  return true;
}

// Waits until the node at `endpoint` reports, for each of `pchannels`, a replicator to
// `secondary` that handed over (replicator.h); DEADLINE_EXCEEDED naming the first missing.
absl::Status AwaitHandover(const Args& args, const std::string& endpoint,
                           const google::protobuf::RepeatedPtrField<std::string>& pchannels,
                           const std::string& secondary) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = ChannelTo(args, endpoint);
  if (!channel.ok()) return channel.status();
  auto stub = v1::Replicate::NewStub(*channel);
  const absl::Time deadline = absl::Now() + absl::Seconds(args.timeout_seconds);
  for (std::string missing;;) {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(deadline));
    v1::ReplicateStatusResponse status;
    absl::Status s =
        wire::FromGrpcStatus(stub->Status(&ctx, v1::ReplicateStatusRequest(), &status));
    if (!s.ok()) return WithContext(s, endpoint);
    missing.clear();
    for (const std::string& p : pchannels) {
      bool done = false;
      for (const v1::ReplicatorStatus& r : status.replicators()) {
        done = done || (r.pchannel() == p && r.secondary_cluster_id() == secondary &&
                        r.state() == "handed_over");
      }
      if (!done && missing.empty()) missing = p;
    }
    if (missing.empty()) return absl::OkStatus();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "pchannel ", missing, " of the old primary at ", endpoint,
          " has not handed everything over to ", secondary,
          " (its node restarted, or it is still sending: see `kfctl replicate status`); the new "
          "configuration is in force on the old primary only"));
    }
    absl::SleepFor(absl::Milliseconds(100));  // polling period
  }
}

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  return out;
}

}  // namespace

int RunReplicateConfigure(const Args& args, std::FILE* out, std::FILE* err) {
  std::vector<Cluster> clusters;  // the primary first
  for (const auto& [flag, text] : [&] {
         std::vector<std::pair<std::string, std::string>> all = {
             {"--primary", args.replicate.primary}};
         for (const std::string& s : args.replicate.secondaries) all.emplace_back("--secondary", s);
         return all;
       }()) {
    absl::StatusOr<Cluster> c = ParseCluster(flag, text);
    if (!c.ok()) {
      PrintError(err, c.status());
      return kExitUsage;
    }
    clusters.push_back(*std::move(c));
  }
  // Each endpoint says which cluster it is and which pchannels it has.
  v1::ReplicateConfiguration config;
  for (const Cluster& c : clusters) {
    absl::StatusOr<v1::GetReplicateConfigResponse> got = GetConfig(args, c.endpoint);
    if (!got.ok()) {
      PrintError(err, got.status());
      return kExitServerError;
    }
    if (got->cluster_id() != c.id) {
      PrintError(err, StreamingError(StreamingCode::kInvalidArgument,
                                     absl::StrCat("endpoint ", c.endpoint, " is cluster ",
                                                  got->cluster_id(), ", not ", c.id)));
      return kExitUsage;
    }
    v1::ReplicateCluster* cluster = config.add_clusters();
    cluster->set_cluster_id(c.id);
    cluster->set_endpoint(c.endpoint);
    *cluster->mutable_pchannels() = got->pchannels();
    if (&c != &clusters.front()) {
      v1::ReplicateTopologyEdge* edge = config.add_topology();
      edge->set_source_cluster_id(clusters.front().id);
      edge->set_target_cluster_id(c.id);
    }
  }
  if (absl::Status bad = ValidateReplicateConfig(config); !bad.ok()) {
    PrintError(err, bad);
    return kExitUsage;
  }
  // The secondaries first: they take replicated messages before the primary sends any.
  for (size_t i = 1; i <= clusters.size(); ++i) {
    const Cluster& c = clusters[i % clusters.size()];
    if (!Alter(args, config, c.id, c.endpoint, out, err)) return kExitServerError;
  }
  return kExitOk;
}

int RunReplicatePromote(const Args& args, std::FILE* out, std::FILE* err) {
  const std::string& id = args.replicate.promote;
  absl::StatusOr<v1::GetReplicateConfigResponse> got = GetConfig(args, args.endpoint);
  if (!got.ok()) {
    PrintError(err, got.status());
    return kExitServerError;
  }
  if (got->cluster_id() != id) {
    PrintError(err, StreamingError(StreamingCode::kInvalidArgument,
                                   absl::StrCat("endpoint ", args.endpoint, " is cluster ",
                                                got->cluster_id(), ", not ", id)));
    return kExitUsage;
  }
  const ReplicateRole role = RoleOf(got->config(), id);
  if (role.kind != ReplicateRole::Kind::kSecondary || got->config().clusters_size() != 2) {
    PrintError(err, StreamingError(
                        StreamingCode::kInvalidArgument,
                        absl::StrCat("cluster ", id, " is ", ToAbsl(ReplicateRoleName(role.kind)),
                                     " in a configuration of ", got->config().clusters_size(),
                                     " clusters; promote swaps a primary and its one secondary")));
    return kExitUsage;
  }
  if (args.replicate.force) {
    // Failover: this cluster alone, no edge. Its WALs take writes from that message on and
    // refuse the old primary's replicators from then on (they see it is no secondary: fenced).
    v1::ReplicateConfiguration alone;
    *alone.add_clusters() = *FindCluster(got->config(), id);
    return Alter(args, alone, id, args.endpoint, out, err) ? kExitOk : kExitServerError;
  }
  v1::ReplicateConfiguration swapped = got->config();
  swapped.mutable_topology(0)->set_source_cluster_id(id);
  swapped.mutable_topology(0)->set_target_cluster_id(role.primary_id);
  const v1::ReplicateCluster* old_primary = FindCluster(swapped, role.primary_id);
  // The old primary first: it stops taking writes where the configuration enters its WALs, and
  // its replicators hand over everything before that.
  if (!Alter(args, swapped, role.primary_id, old_primary->endpoint(), out, err)) {
    std::fprintf(err,
                 "kfctl: the primary %s at %s did not take the switchover; if it is gone, "
                 "`kfctl replicate promote %s --force` makes %s a primary without it\n",
                 role.primary_id.c_str(), old_primary->endpoint().c_str(), id.c_str(), id.c_str());
    return kExitServerError;
  }
  if (absl::Status s = AwaitHandover(args, old_primary->endpoint(), old_primary->pchannels(), id);
      !s.ok()) {
    PrintError(err, s);
    return kExitServerError;
  }
  return Alter(args, swapped, id, args.endpoint, out, err) ? kExitOk : kExitServerError;
}

int RunReplicateStatus(const Args& args, std::FILE* out, std::FILE* err) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = ChannelTo(args, args.endpoint);
  if (!channel.ok()) {
    PrintError(err, channel.status());
    return kExitUsage;
  }
  auto stub = v1::Replicate::NewStub(*channel);
  grpc::ClientContext ctx;
  SetDeadline(args, &ctx);
  v1::ReplicateStatusResponse status;
  absl::Status s = wire::FromGrpcStatus(stub->Status(&ctx, v1::ReplicateStatusRequest(), &status));
  if (!s.ok()) {
    PrintError(err, WithContext(s, args.endpoint));
    return kExitServerError;
  }
  PrintLine(out, Json(status));
  return kExitOk;
}

}  // namespace kf::cli
