#include "storage/object/http_client.h"

#include <algorithm>
#include <cctype>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace kf::object {
namespace {

struct Upload {
  std::string_view body;
  size_t pos = 0;
};

size_t ReadBody(char* buf, size_t size, size_t n, void* arg) {
  auto* up = static_cast<Upload*>(arg);
  const size_t len = std::min(size * n, up->body.size() - up->pos);
  std::copy_n(up->body.data() + up->pos, len, buf);
  up->pos += len;
  return len;
}

// Lets curl rewind the body when it has to resend it (e.g. after a redirect or auth retry).
int SeekBody(void* arg, curl_off_t offset, int origin) {
  auto* up = static_cast<Upload*>(arg);
  if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > up->body.size()) {
    return CURL_SEEKFUNC_FAIL;
  }
  up->pos = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

size_t WriteBody(char* data, size_t size, size_t n, void* arg) {
  static_cast<std::string*>(arg)->append(data, size * n);
  return size * n;
}

size_t WriteHeader(char* data, size_t size, size_t n, void* arg) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(arg);
  std::string_view line(data, size * n);
  if (line.substr(0, 5) == "HTTP/") headers->clear();  // a new response (after 100 Continue)
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() &&
           (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
      value.remove_suffix(1);
    }
    (*headers)[name] = std::string(value);
  }
  return size * n;
}

}  // namespace

HttpClient::HttpClient(HttpClientOptions options)
    : options_(std::move(options)),
      sigv4_(absl::StrCat("aws:amz:", options_.region, ":s3")),
      userpwd_(absl::StrCat(options_.access_key, ":", options_.secret_key)) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_ALL); });
}

HttpClient::~HttpClient() {
  absl::MutexLock l(&mu_);
  for (CURL* h : idle_) curl_easy_cleanup(h);
}

CURL* HttpClient::Acquire() {
  {
    absl::MutexLock l(&mu_);
    if (!idle_.empty()) {
      CURL* h = idle_.back();
      idle_.pop_back();
      curl_easy_reset(h);  // keeps the live connection
      return h;
    }
  }
  return curl_easy_init();
}

void HttpClient::Release(CURL* handle, bool reusable) {
  if (reusable) {
    absl::MutexLock l(&mu_);
    if (idle_.size() < options_.max_idle_handles) {
      idle_.push_back(handle);
      return;
    }
  }
  curl_easy_cleanup(handle);
}

HttpResult HttpClient::Perform(const HttpRequest& req, absl::Time deadline) {
  HttpResult result;
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) {
    result.status = absl::DeadlineExceededError("deadline passed before the request");
    result.maybe_sent = false;
    return result;
  }
  CURL* h = Acquire();
  if (h == nullptr) {
    result.status = absl::InternalError("curl_easy_init failed");
    result.maybe_sent = false;
    return result;
  }
  const long timeout_ms = std::max<long>(1, absl::ToInt64Milliseconds(left));
  const long connect_ms =
      std::min(timeout_ms, std::max<long>(1, absl::ToInt64Milliseconds(options_.connect_timeout)));
  Upload upload{req.body};
  curl_slist* headers = nullptr;
  for (const std::string& hdr : req.headers) headers = curl_slist_append(headers, hdr.c_str());
  // curl 7.88 signs every header it is given, even the "Expect:" that would turn off its
  // 100-continue round trip, so that stays on (cheap on loopback; see docs/object-store.md).

  curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
  curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4_.c_str());
  curl_easy_setopt(h, CURLOPT_USERPWD, userpwd_.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &result.response.body);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, WriteHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &result.response.headers);
  if (req.method == "PUT") {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, ReadBody);
    curl_easy_setopt(h, CURLOPT_READDATA, &upload);
    curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, SeekBody);
    curl_easy_setopt(h, CURLOPT_SEEKDATA, &upload);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  } else if (req.method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (req.method != "GET") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }

  const CURLcode rc = curl_easy_perform(h);
  curl_slist_free_all(headers);
  if (rc == CURLE_OK) {
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &result.response.status);
    Release(h, /*reusable=*/true);
    return result;
  }
  // No connection was ever made: the server cannot have seen the request.
  curl_off_t connect_us = 0;
  curl_easy_getinfo(h, CURLINFO_CONNECT_TIME_T, &connect_us);
  result.maybe_sent = connect_us > 0 && rc != CURLE_COULDNT_CONNECT;
  // The connection may be half-used: never hand this handle (and its connection) out again.
  Release(h, /*reusable=*/false);
  const std::string what = absl::StrCat(req.method, " ", req.url, ": ", curl_easy_strerror(rc));
  if (rc == CURLE_OPERATION_TIMEDOUT && absl::Now() >= deadline) {
    result.status = absl::DeadlineExceededError(what);
  } else {
    result.status = absl::UnavailableError(what);
  }
  return result;
}

}  // namespace kf::object
