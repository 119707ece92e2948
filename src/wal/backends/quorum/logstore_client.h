// LogStoreClient: the quorum writer's and readers' client of one logstore (blocking unary calls
// with a deadline each, on the caller's thread), and LogStorePool, one client per address
// shared by every log an opener serves.
//
// Each client remembers whether its last call reached the logstore (`healthy`), which the writer
// uses to leave dead logstores out of the next segment's ensemble.
//
// Thread-safety: thread-safe. Ownership: the pool owns its clients (shared_ptr: a segment's
// senders keep theirs). Errors: the logstore's (FENCED, OUT_OF_RANGE, NOT_FOUND, ...) and
// UNAVAILABLE / DEADLINE_EXCEEDED for transport failures.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"
#include "kingfisher/v1/logstore.pb.h"

namespace kf::wal::quorum {

class LogStoreClient {
 public:
  // `credentials` (wire/credentials.h) null: plaintext.
  LogStoreClient(std::string address, std::shared_ptr<grpc::ChannelCredentials> credentials);
  ~LogStoreClient();

  const std::string& address() const { return address_; }
  bool healthy() const { return healthy_.load(std::memory_order_relaxed); }

  absl::StatusOr<kingfisher::v1::AddEntriesResponse> AddEntries(
      const kingfisher::v1::AddEntriesRequest& req, absl::Time deadline);
  absl::StatusOr<kingfisher::v1::FenceResponse> Fence(const kingfisher::v1::FenceRequest& req,
                                                      absl::Time deadline);
  absl::StatusOr<kingfisher::v1::ReadEntriesResponse> ReadEntries(
      const kingfisher::v1::ReadEntriesRequest& req, absl::Time deadline);
  absl::Status Seal(const kingfisher::v1::SealRequest& req, absl::Time deadline);
  absl::Status DeleteSegment(const kingfisher::v1::DeleteSegmentRequest& req, absl::Time deadline);

 private:
  struct Stub;
  template <typename Resp, typename Call>
  absl::StatusOr<Resp> Invoke(absl::Time deadline, Call call);

  const std::string address_;
  std::unique_ptr<Stub> stub_;
  std::atomic<bool> healthy_{true};
};

class LogStorePool {
 public:
  // Clients dial with `credentials` (null: plaintext).
  explicit LogStorePool(std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr)
      : credentials_(std::move(credentials)) {}
  std::shared_ptr<LogStoreClient> Get(const std::string& address);

 private:
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<LogStoreClient>> clients_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::wal::quorum
