#include "client/rpc_status.h"

#include <string>

#include "common/absl_compat.h"
#include "common/errors.h"

namespace kf::client {
namespace {

bool IsKnownStreamingCode(int32_t c) {
  return c > 0 && c <= static_cast<int32_t>(StreamingCode::kTransport);
}

absl::StatusCode ClampCode(int32_t c) {
  if (c < 0 || c > static_cast<int32_t>(absl::StatusCode::kUnauthenticated)) {
    return absl::StatusCode::kUnknown;
  }
  return static_cast<absl::StatusCode>(c);
}

}  // namespace

absl::Status FromErrorProto(const kingfisher::v1::Error& error) {
  if (IsKnownStreamingCode(error.streaming_code())) {
    auto code = static_cast<StreamingCode>(error.streaming_code());
    absl::Status s = StreamingError(code, error.message());
    // The table maps each streaming code to one gRPC code; trust the server's code if it is an
    // error at all and differs (it knows better), keeping the streaming code.
    if (error.grpc_code() != 0 && ClampCode(error.grpc_code()) != s.code()) {
      absl::Status t(ClampCode(error.grpc_code()), ToAbsl(error.message()));
      s.ForEachPayload(
          [&t](absl::string_view url, const absl::Cord& payload) { t.SetPayload(url, payload); });
      return t;
    }
    return s;
  }
  absl::StatusCode code = ClampCode(error.grpc_code());
  if (code == absl::StatusCode::kOk) code = absl::StatusCode::kUnknown;
  return absl::Status(code, ToAbsl(error.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  if (!status.error_details().empty()) {
    kingfisher::v1::Error e;
    if (e.ParseFromString(status.error_details()) &&
        (e.grpc_code() != 0 || e.streaming_code() != 0)) {
      if (e.message().empty()) e.set_message(status.error_message());
      if (e.grpc_code() == 0) e.set_grpc_code(static_cast<int32_t>(status.error_code()));
      return FromErrorProto(e);
    }
  }
  return absl::Status(ClampCode(static_cast<int32_t>(status.error_code())), status.error_message());
}

}  // namespace kf::client
