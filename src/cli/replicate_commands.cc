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

std::shared_ptr<grpc::Channel> ChannelTo(const std::string& endpoint) {
  return grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials());
}

void SetDeadline(const Args& args, grpc::ClientContext* ctx) {
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(args.timeout_seconds)));
}

absl::StatusOr<v1::GetReplicateConfigResponse> GetConfig(const Args& args,
                                                         const std::string& endpoint) {
  auto stub = v1::ReplicateAdmin::NewStub(ChannelTo(endpoint));
  grpc::ClientContext ctx;
  SetDeadline(args, &ctx);
  v1::GetReplicateConfigResponse response;
  absl::Status s = wire::FromGrpcStatus(
      stub->GetReplicateConfig(&ctx, v1::GetReplicateConfigRequest(), &response));
  if (!s.ok()) return WithContext(s, endpoint);
  return response;
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
    auto stub = v1::ReplicateAdmin::NewStub(ChannelTo(c.endpoint));
    grpc::ClientContext ctx;
    SetDeadline(args, &ctx);
    v1::AlterReplicateConfigRequest request;
    *request.mutable_config() = config;
    v1::AlterReplicateConfigResponse response;
    absl::Status s = wire::FromGrpcStatus(stub->AlterReplicateConfig(&ctx, request, &response));
    if (!s.ok()) {
      PrintError(err, WithContext(s, absl::StrCat("cluster ", c.id, " at ", c.endpoint)));
      return kExitServerError;
    }
    PrintLine(
        out, absl::StrCat(R"({"cluster":")", c.id, R"(","endpoint":")", c.endpoint, R"(","role":")",
                          ToAbsl(ReplicateRoleName(RoleOf(config, c.id).kind)), R"("})"));
  }
  return kExitOk;
}

int RunReplicateStatus(const Args& args, std::FILE* out, std::FILE* err) {
  auto stub = v1::Replicate::NewStub(ChannelTo(args.endpoint));
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
