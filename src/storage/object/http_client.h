// HttpClient: one blocking HTTP/1.1 request over libcurl, signed with AWS SigV4 by curl
// (CURLOPT_AWS_SIGV4), on a small pool of reused easy handles (keep-alive connections). The
// S3 store builds requests and interprets answers; this only moves bytes.
//
// Thread-safety: thread-safe; each Perform uses its own handle. Ownership: owns its handles.
// Errors: a transport failure (no HTTP answer) is UNAVAILABLE, or DEADLINE_EXCEEDED when the
// deadline cut the request; HttpResult::maybe_sent says whether the server may have received
// the whole request (false only when no connection was made). An HTTP answer, any status,
// is OK.
#pragma once

#include <curl/curl.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kf::object {

struct HttpRequest {
  std::string method;  // GET, HEAD, PUT, DELETE
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string_view body;             // sent for PUT
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

struct HttpResult {
  absl::Status status;  // of the transport
  bool maybe_sent = true;
  HttpResponse response;  // valid when status is OK
};

struct HttpClientOptions {
  std::string region;  // SigV4 scope: "aws:amz:<region>:s3"
  std::string access_key;
  std::string secret_key;
  // A connection attempt gives up after this (or the deadline, if sooner).
  absl::Duration connect_timeout = absl::Seconds(2);
  size_t max_idle_handles = 8;
};

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  HttpResult Perform(const HttpRequest& request, absl::Time deadline);

 private:
  CURL* Acquire();
  void Release(CURL* handle, bool reusable);

  const HttpClientOptions options_;
  const std::string sigv4_;
  const std::string userpwd_;
  absl::Mutex mu_;
  std::vector<CURL*> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::object
