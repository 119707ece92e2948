#include "storage/object/s3_object_store.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/backoff.h"
#include "common/status_macros.h"
#include "storage/object/digest.h"
#include "storage/object/s3_xml.h"

namespace kf::object {
namespace {

constexpr char kEmptySha256[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr size_t kMaxKeysPerPage = 1000;

// RFC 3986 unreserved characters stay, everything else is %XX (SigV4's URI encoding, which
// the query string must already be in: curl signs it as given).
std::string UriEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string Unquote(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

const std::string* Header(const HttpResponse& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? nullptr : &it->second;
}

std::string ErrorCode(const HttpResponse& r) {
  if (r.body.empty()) return "";
  auto e = ParseS3Error(r.body);
  return e.ok() ? e->code : "";
}

// Answers worth another attempt: the server is overloaded or failed transiently.
bool Retryable(const HttpResponse& r) {
  if (r.status == 500 || r.status == 502 || r.status == 503 || r.status == 504) return true;
  const std::string code = ErrorCode(r);
  return code == "SlowDown" || code == "RequestTimeout" || code == "InternalError" ||
         code == "ServiceUnavailable";
}

// The status of a non-2xx answer.
absl::Status FromResponse(const HttpResponse& r, std::string_view what) {
  std::string code;
  std::string detail;
  if (!r.body.empty()) {
    if (auto e = ParseS3Error(r.body); e.ok()) {
      code = e->code;
      detail = absl::StrCat(" ", e->code, ": ", e->message);
    }
  }
  const std::string msg = absl::StrCat(ToAbsl(what), ": HTTP ", r.status, detail);
  switch (r.status) {
    case 400:
      return absl::InvalidArgumentError(msg);
    case 403:
      return absl::PermissionDeniedError(msg);
    case 404:
      return absl::NotFoundError(msg);
    case 409:
      return absl::AbortedError(msg);
    case 412:
      return absl::FailedPreconditionError(msg);
    case 416:
      return absl::OutOfRangeError(msg);
    case 500:
    case 502:
    case 503:
    case 504:
      return absl::UnavailableError(msg);
    default:
      return absl::InternalError(msg);
  }
}

bool Is2xx(const HttpResponse& r) { return r.status >= 200 && r.status < 300; }

bool ValidBucket(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  return std::all_of(b.begin(), b.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
  });
}

// "bytes <first>-<last>/<total>".
bool ParseContentRange(const std::string& v, uint64_t* first, uint64_t* last, uint64_t* total) {
  if (v.rfind("bytes ", 0) != 0) return false;
  const size_t dash = v.find('-', 6);
  const size_t slash = v.find('/', 6);
  if (dash == std::string::npos || slash == std::string::npos || dash > slash) return false;
  return absl::SimpleAtoi(v.substr(6, dash - 6), first) &&
         absl::SimpleAtoi(v.substr(dash + 1, slash - dash - 1), last) &&
         absl::SimpleAtoi(v.substr(slash + 1), total) && *first <= *last && *last < *total;
}

bool IsMd5Etag(const std::string& etag) {
  return etag.size() == 32 && etag.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

// What a Send did besides its final answer.
struct S3ObjectStore::Attempted {
  int attempts = 0;
  // An attempt before the last may have reached the server and been applied.
  bool maybe_applied = false;
};

absl::StatusOr<std::unique_ptr<S3ObjectStore>> S3ObjectStore::Create(S3Options options) {
  if (options.endpoint.empty() || options.endpoint.back() == '/') {
    return absl::InvalidArgumentError("S3 endpoint must be set, without a trailing '/'");
  }
  if (!ValidBucket(options.bucket)) {
    return absl::InvalidArgumentError(absl::StrCat("bad S3 bucket name: ", options.bucket));
  }
  return std::unique_ptr<S3ObjectStore>(new S3ObjectStore(std::move(options)));
}

S3ObjectStore::S3ObjectStore(S3Options options)
    : options_(std::move(options)),
      http_(HttpClientOptions{.region = options_.region,
                              .access_key = options_.access_key,
                              .secret_key = options_.secret_key,
                              .connect_timeout = options_.connect_timeout,
                              .max_idle_handles = options_.max_idle_connections}) {}

std::string S3ObjectStore::ObjectUrl(std::string_view key) const {
  // The key charset needs no escaping in a path.
  return absl::StrCat(options_.endpoint, "/", options_.bucket, "/", ToAbsl(key));
}

absl::StatusOr<HttpResponse> S3ObjectStore::Send(const HttpRequest& req, absl::Time deadline,
                                                 Attempted* attempted) {
  Backoff backoff(options_.initial_backoff, options_.max_backoff);
  thread_local std::minstd_rand jitter(std::random_device{}());
  absl::Status last;
  for (;;) {
    HttpResult r = http_.Perform(req, deadline);
    ++attempted->attempts;
    if (r.status.ok()) {
      if (!Retryable(r.response)) return std::move(r.response);
      // A 503 (SlowDown) was refused before anything was done; a 500 may have been applied.
      if (r.response.status != 503) attempted->maybe_applied = true;
      last = FromResponse(r.response, absl::StrCat(req.method, " ", req.url));
    } else {
      if (r.maybe_sent) attempted->maybe_applied = true;
      if (!absl::IsUnavailable(r.status)) return r.status;  // deadline, or not retryable
      last = r.status;
    }
    // Half to all of the exponential step: racing clients do not retry in lockstep.
    const absl::Duration wait =
        backoff.Next() * std::uniform_real_distribution<double>(0.5, 1.0)(jitter);
    if (absl::Now() + wait >= deadline) {
      return absl::UnavailableError(absl::StrCat(last.message(), " (", attempted->attempts,
                                                 " attempts; the deadline allows no more)"));
    }
    absl::SleepFor(wait);
    retries_.fetch_add(1, std::memory_order_relaxed);
  }
}

absl::Status S3ObjectStore::CreateBucket(absl::Time deadline) {
  HttpRequest req{.method = "PUT",
                  .url = absl::StrCat(options_.endpoint, "/", options_.bucket),
                  .headers = {absl::StrCat("x-amz-content-sha256: ", kEmptySha256)}};
  Attempted attempted;
  ASSIGN_OR_RETURN(HttpResponse resp, Send(req, deadline, &attempted));
  if (Is2xx(resp) || ErrorCode(resp) == "BucketAlreadyOwnedByYou") return absl::OkStatus();
  if (resp.status == 409) {
    return absl::AlreadyExistsError(
        absl::StrCat("bucket owned by someone else: ", options_.bucket));
  }
  return FromResponse(resp, absl::StrCat("create bucket ", options_.bucket));
}

absl::StatusOr<std::string> S3ObjectStore::Put(std::string_view key, std::string_view data,
                                               const PutOptions& options, absl::Time deadline) {
  RETURN_IF_ERROR(ValidateKey(key));
  const std::string md5_hex = HexLower(Md5(data));
  HttpRequest req{.method = "PUT", .url = ObjectUrl(key), .body = data};
  req.headers = {absl::StrCat("Content-MD5: ", Base64(Md5(data))),
                 absl::StrCat("x-amz-content-sha256: ", HexLower(Sha256(data))),
                 "Content-Type: application/octet-stream"};
  if (options.if_absent) req.headers.push_back("If-None-Match: *");
  Attempted attempted;
  for (;;) {
    ASSIGN_OR_RETURN(HttpResponse resp, Send(req, deadline, &attempted));
    if (Is2xx(resp)) {
      const std::string* etag = Header(resp, "etag");
      if (etag == nullptr || Unquote(*etag) != md5_hex) {
        return absl::DataLossError(absl::StrCat("PUT ", ToAbsl(key), ": server ETag ",
                                                etag ? *etag : "<none>", " is not our MD5 ",
                                                md5_hex));
      }
      return md5_hex;
    }
    if (options.if_absent && resp.status == 409) {
      // A concurrent conditional write is in flight (AWS ConditionalRequestConflict): ask
      // again; the answer will be a clear 200 or 412.
      if (absl::Now() + options_.initial_backoff >= deadline) {
        return absl::DeadlineExceededError("conditional PUT conflict until the deadline");
      }
      absl::SleepFor(options_.initial_backoff);
      continue;
    }
    if (options.if_absent && resp.status == 412) {
      if (attempted.maybe_applied) {
        // An earlier attempt of ours may be the object we collided with.
        auto head = Head(key, deadline);
        if (head.ok() && head->size == data.size() && head->etag == md5_hex) return md5_hex;
        if (!head.ok() && !absl::IsNotFound(head.status())) return head.status();
      }
      return absl::AlreadyExistsError(absl::StrCat("object exists: ", ToAbsl(key)));
    }
    return FromResponse(resp, absl::StrCat("PUT ", ToAbsl(key)));
  }
}

absl::StatusOr<std::string> S3ObjectStore::Get(std::string_view key, const ByteRange& range,
                                               absl::Time deadline) {
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(ValidateRange(range));
  HttpRequest req{.method = "GET",
                  .url = ObjectUrl(key),
                  .headers = {absl::StrCat("x-amz-content-sha256: ", kEmptySha256)}};
  switch (range.kind()) {
    case ByteRange::Kind::kAll:
      break;
    case ByteRange::Kind::kSpan:
      if (range.length() > ByteRange::kToEnd - range.offset() - 1) {
        req.headers.push_back(absl::StrCat("Range: bytes=", range.offset(), "-"));
      } else {
        req.headers.push_back(absl::StrCat("Range: bytes=", range.offset(), "-",
                                           range.offset() + range.length() - 1));
      }
      break;
    case ByteRange::Kind::kSuffix:
      req.headers.push_back(absl::StrCat("Range: bytes=-", range.length()));
      break;
  }
  Attempted attempted;
  ASSIGN_OR_RETURN(HttpResponse resp, Send(req, deadline, &attempted));
  const std::string what = absl::StrCat("GET ", ToAbsl(key));
  if (resp.status == 200) {
    if (const std::string* etag = Header(resp, "etag"); etag != nullptr) {
      const std::string e = Unquote(*etag);
      if (IsMd5Etag(e) && HexLower(Md5(resp.body)) != e) {
        return absl::DataLossError(absl::StrCat(what, ": body does not match its ETag ", e));
      }
    }
    if (range.kind() == ByteRange::Kind::kAll) return std::move(resp.body);
    // The server ignored the Range header: cut the range out ourselves.
    uint64_t begin = 0, end = 0;
    RETURN_IF_ERROR(ResolveRange(range, resp.body.size(), &begin, &end));
    return resp.body.substr(begin, end - begin);
  }
  if (resp.status == 206) {
    const std::string* cr = Header(resp, "content-range");
    uint64_t first = 0, last = 0, total = 0, begin = 0, end = 0;
    if (cr == nullptr || !ParseContentRange(*cr, &first, &last, &total)) {
      return absl::DataLossError(absl::StrCat(what, ": bad Content-Range"));
    }
    RETURN_IF_ERROR(ResolveRange(range, total, &begin, &end));
    if (first != begin || last + 1 != end || resp.body.size() != end - begin) {
      return absl::DataLossError(absl::StrCat(what, ": got bytes ", *cr, " (", resp.body.size(),
                                              "), asked for [", begin, ", ", end, ")"));
    }
    return std::move(resp.body);
  }
  return FromResponse(resp, what);
}

absl::StatusOr<ObjectInfo> S3ObjectStore::Head(std::string_view key, absl::Time deadline) {
  RETURN_IF_ERROR(ValidateKey(key));
  HttpRequest req{.method = "HEAD",
                  .url = ObjectUrl(key),
                  .headers = {absl::StrCat("x-amz-content-sha256: ", kEmptySha256)}};
  Attempted attempted;
  ASSIGN_OR_RETURN(HttpResponse resp, Send(req, deadline, &attempted));
  const std::string what = absl::StrCat("HEAD ", ToAbsl(key));
  if (!Is2xx(resp)) return FromResponse(resp, what);
  ObjectInfo info{.key = std::string(key)};
  const std::string* len = Header(resp, "content-length");
  if (len == nullptr || !absl::SimpleAtoi(*len, &info.size)) {
    return absl::InternalError(absl::StrCat(what, ": no Content-Length"));
  }
  if (const std::string* etag = Header(resp, "etag"); etag != nullptr) info.etag = Unquote(*etag);
  return info;
}

absl::StatusOr<ListResult> S3ObjectStore::List(std::string_view prefix,
                                               std::string_view start_after, size_t limit,
                                               absl::Time deadline) {
  RETURN_IF_ERROR(ValidateList(prefix, start_after, limit));
  ListResult out;
  std::string token;
  for (;;) {
    const size_t want = std::min(kMaxKeysPerPage, limit - out.objects.size());
    // Parameters in sorted order, already encoded: this is the canonical query SigV4 signs.
    std::string query;
    if (!token.empty()) absl::StrAppend(&query, "continuation-token=", UriEncode(token), "&");
    absl::StrAppend(&query, "list-type=2&max-keys=", want);
    if (!prefix.empty()) absl::StrAppend(&query, "&prefix=", UriEncode(prefix));
    if (!start_after.empty() && token.empty()) {
      absl::StrAppend(&query, "&start-after=", UriEncode(start_after));
    }
    HttpRequest req{.method = "GET",
                    .url = absl::StrCat(options_.endpoint, "/", options_.bucket, "?", query),
                    .headers = {absl::StrCat("x-amz-content-sha256: ", kEmptySha256)}};
    Attempted attempted;
    ASSIGN_OR_RETURN(HttpResponse resp, Send(req, deadline, &attempted));
    if (!Is2xx(resp)) return FromResponse(resp, absl::StrCat("LIST ", ToAbsl(prefix)));
    ASSIGN_OR_RETURN(ListObjectsPage page, ParseListObjectsV2(resp.body));
    if (page.objects.size() > want) {
      return absl::InternalError(
          absl::StrCat("LIST returned ", page.objects.size(), " keys, asked for ", want));
    }
    for (ObjectInfo& o : page.objects) out.objects.push_back(std::move(o));
    if (!page.truncated) return out;
    if (out.objects.size() == limit) {
      out.truncated = true;
      return out;
    }
    token = std::move(page.next_continuation_token);
  }
}

absl::Status S3ObjectStore::Delete(std::string_view key, absl::Time deadline) {
  RETURN_IF_ERROR(ValidateKey(key));
  HttpRequest req{.method = "DELETE",
                  .url = ObjectUrl(key),
                  .headers = {absl::StrCat("x-amz-content-sha256: ", kEmptySha256)}};
  Attempted attempted;
  ASSIGN_OR_RETURN(HttpResponse resp, Send(req, deadline, &attempted));
  if (Is2xx(resp) || resp.status == 404) return absl::OkStatus();
  return FromResponse(resp, absl::StrCat("DELETE ", ToAbsl(key)));
}

}  // namespace kf::object
