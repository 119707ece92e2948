#include "wire/status_convert.h"

#include <string>

#include "common/errors.h"

namespace kf::wire {
namespace {

constexpr int kMaxStreamingCode = static_cast<int>(kLastStreamingCode);
constexpr int kMaxStatusCode = static_cast<int>(absl::StatusCode::kUnauthenticated);

}  // namespace

kingfisher::v1::Error ToProtoError(const absl::Status& status) {
  kingfisher::v1::Error error;
  error.set_grpc_code(static_cast<int>(status.code()));
  error.set_streaming_code(status.ok() ? 0 : static_cast<int>(GetStreamingCode(status)));
  error.set_message(std::string(status.message()));
  return error;
}

absl::Status FromProtoError(const kingfisher::v1::Error& error) {
  const int sc = error.streaming_code();
  if (sc > 0 && sc <= kMaxStreamingCode) {
    return StreamingError(static_cast<StreamingCode>(sc), error.message());
  }
  const int gc = error.grpc_code();
  if (gc <= 0 || gc > kMaxStatusCode) {
    // An error that claims success (or an unknown code) is itself a protocol violation.
    return absl::UnknownError("malformed error from peer (code " + std::to_string(gc) +
                              "): " + error.message());
  }
  return absl::Status(static_cast<absl::StatusCode>(gc), error.message());
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()),
                      ToProtoError(status).SerializeAsString());
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  if (!status.error_details().empty()) {
    kingfisher::v1::Error error;
    if (error.ParseFromString(status.error_details()) &&
        (error.streaming_code() != 0 || error.grpc_code() != 0)) {
      return FromProtoError(error);
    }
  }
  const int gc = static_cast<int>(status.error_code());
  if (gc <= 0 || gc > kMaxStatusCode) return absl::UnknownError(status.error_message());
  return absl::Status(static_cast<absl::StatusCode>(gc), status.error_message());
}

}  // namespace kf::wire
