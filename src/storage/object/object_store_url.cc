#include "storage/object/object_store_url.h"

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "storage/fs/file_system.h"
#include "storage/object/local_object_store.h"
#include "storage/object/s3_object_store.h"

namespace kf::object {
namespace {

absl::Status BadUrl(std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("object store URL: ", ToAbsl(why),
                   " (use file:///ABS/DIR or s3://[ACCESS:SECRET@]HOST:PORT/BUCKET)"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ObjectStore>> OpenObjectStoreUrl(std::string_view url,
                                                                absl::Time deadline) {
  if (url.starts_with("file://")) {
    const std::string dir(url.substr(7));
    if (dir.empty() || dir[0] != '/') return BadUrl("file:// needs an absolute directory");
    auto store = LocalObjectStore::Open(fs::DefaultFileSystem(), dir);
    if (!store.ok()) return store.status();
    return std::unique_ptr<ObjectStore>(*std::move(store));
  }
  if (!url.starts_with("s3://")) return BadUrl("unknown scheme");
  std::string_view rest = url.substr(5);
  S3Options options;
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view creds = rest.substr(0, at);
    const size_t colon = creds.find(':');
    if (colon == std::string_view::npos) return BadUrl("credentials must be ACCESS:SECRET");
    options.access_key = std::string(creds.substr(0, colon));
    options.secret_key = std::string(creds.substr(colon + 1));
    rest.remove_prefix(at + 1);
  } else {
    const char* access = std::getenv("AWS_ACCESS_KEY_ID");
    const char* secret = std::getenv("AWS_SECRET_ACCESS_KEY");
    if (access == nullptr || secret == nullptr) {
      return BadUrl("no credentials in the URL nor in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY");
    }
    options.access_key = access;
    options.secret_key = secret;
  }
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) {
    return BadUrl("s3:// needs HOST:PORT/BUCKET");
  }
  options.endpoint = absl::StrCat("http://", ToAbsl(rest.substr(0, slash)));
  options.bucket = std::string(rest.substr(slash + 1));
  auto store = S3ObjectStore::Create(std::move(options));
  if (!store.ok()) return store.status();
  if (absl::Status s = (*store)->CreateBucket(deadline); !s.ok()) return s;
  return std::unique_ptr<ObjectStore>(*std::move(store));
}

}  // namespace kf::object
