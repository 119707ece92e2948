#include "rpc/coord_tso_fetcher.h"

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "wire/status_convert.h"

namespace kf::rpc {

absl::StatusOr<streaming::TimestampBatchFetcher::Batch> CoordTsoFetcher::Fetch(
    uint32_t count, TimeTick at_least, absl::Time deadline) {
  std::shared_ptr<const streaming::AssignmentSnapshot> snapshot = view_->Current();
  if (!snapshot->coord.has_value() || snapshot->coord->address().empty()) {
    return absl::UnavailableError("no coordinator is registered: cannot allocate timeticks");
  }
  std::shared_ptr<kingfisher::v1::StreamingCoord::Stub> stub;
  {
    absl::MutexLock l(&mu_);
    if (stub_ == nullptr || address_ != snapshot->coord->address()) {
      address_ = snapshot->coord->address();
      grpc::ChannelArguments args;
      // A restarted coordinator must be reachable at once, not after gRPC's DNS re-resolution
      // rate limit (~10 s by default).
      args.SetInt("grpc.dns_min_time_between_resolutions_ms", 100);
      stub_ = kingfisher::v1::StreamingCoord::NewStub(
          grpc::CreateCustomChannel(address_, credentials_, args));
    }
    stub = stub_;
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(deadline));
  ctx.set_wait_for_ready(true);  // a coordinator restarting is waited for, within the deadline
  kingfisher::v1::AllocateTimestampsRequest req;
  req.set_count(count);
  req.set_at_least(at_least.value());
  kingfisher::v1::AllocateTimestampsResponse resp;
  grpc::Status st = stub->AllocateTimestamps(&ctx, req, &resp);
  if (!st.ok()) {
    absl::Status s = wire::FromGrpcStatus(st);
    return absl::Status(s.code(), absl::StrCat("timestamp oracle at ", snapshot->coord->address(),
                                               ": ", s.message()));
  }
  return Batch{TimeTick(resp.first()), resp.count()};
}

}  // namespace kf::rpc
