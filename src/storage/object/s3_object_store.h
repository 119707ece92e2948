// S3ObjectStore: the ObjectStore on an S3-compatible server (tested against Ceph RGW) over
// libcurl: path-style URLs (<endpoint>/<bucket>/<key>), SigV4 signed by curl, a signed payload
// hash (x-amz-content-sha256) and Content-MD5 on every PUT, conditional create with
// `If-None-Match: *`, ListObjectsV2 parsed strictly (s3_xml.h).
//
// Retries: a transport failure, a 500/502/503/504 or an S3 SlowDown/InternalError/
// RequestTimeout is retried with exponential backoff (jittered) while the deadline allows;
// when the next wait would pass the deadline the last error is returned (UNAVAILABLE), and a
// request cut by the deadline is DEADLINE_EXCEEDED.
// A conditional create is never retried blindly: if an earlier attempt may have reached the
// server (no answer, or a 5xx) and a retry answers 412, the object is read back with Head, and
// the create counts as ours (OK) when its size and MD5 etag equal what we sent; otherwise
// ALREADY_EXISTS. That rule is sound only if two writers never create the same key with the
// same bytes — fence objects must carry the writer's identity (term, node).
// Integrity: a PUT's answer ETag must be the MD5 we computed, a whole-object GET is checked
// against a single-part ETag, and a ranged GET must return exactly the requested bytes;
// otherwise DATA_LOSS.
//
// Thread-safety: thread-safe. Ownership: owns its curl handles.
// Errors: as ObjectStore; 403 is PERMISSION_DENIED, a missing bucket NOT_FOUND, a response
// that does not parse INTERNAL.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "storage/object/http_client.h"
#include "storage/object/object_store.h"

namespace kf::object {

struct S3Options {
  std::string endpoint;  // "http://127.0.0.1:7480" (no trailing '/')
  std::string bucket;
  std::string region = "us-east-1";
  std::string access_key;
  std::string secret_key;
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(2);
  absl::Duration connect_timeout = absl::Seconds(2);
  size_t max_idle_connections = 8;
};

class S3ObjectStore final : public ObjectStore {
 public:
  // INVALID_ARGUMENT for a missing endpoint or a bucket name outside [a-z0-9.-]{3,63}.
  static absl::StatusOr<std::unique_ptr<S3ObjectStore>> Create(S3Options options);

  // Creates the bucket; OK when it already exists and is ours.
  absl::Status CreateBucket(absl::Time deadline);

  absl::StatusOr<std::string> Put(std::string_view key, std::string_view data,
                                  const PutOptions& options, absl::Time deadline) override;
  absl::StatusOr<std::string> Get(std::string_view key, const ByteRange& range,
                                  absl::Time deadline) override;
  absl::StatusOr<ObjectInfo> Head(std::string_view key, absl::Time deadline) override;
  absl::StatusOr<ListResult> List(std::string_view prefix, std::string_view start_after,
                                  size_t limit, absl::Time deadline) override;
  absl::Status Delete(std::string_view key, absl::Time deadline) override;

  // Attempts repeated after a retryable failure, over the store's life (for tests, metrics).
  uint64_t retries() const { return retries_.load(std::memory_order_relaxed); }

 private:
  explicit S3ObjectStore(S3Options options);

  struct Attempted;
  // Sends `req` until it gets a non-retryable answer or the deadline runs out.
  absl::StatusOr<HttpResponse> Send(const HttpRequest& req, absl::Time deadline,
                                    Attempted* attempted);
  std::string ObjectUrl(std::string_view key) const;

  const S3Options options_;
  HttpClient http_;
  std::atomic<uint64_t> retries_{0};
};

}  // namespace kf::object
