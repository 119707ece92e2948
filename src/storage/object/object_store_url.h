// Opens the object store a server is configured with (`object_store` in docs/configuration.md):
//   file:///ABS/DIR                          LocalObjectStore in DIR (created if missing)
//   s3://[ACCESS:SECRET@]HOST:PORT/BUCKET    S3ObjectStore, http://HOST:PORT, path-style; the
//                                            bucket is created if missing. Without credentials
//                                            in the URL, AWS_ACCESS_KEY_ID and
//                                            AWS_SECRET_ACCESS_KEY are used.
// Thread-safety: thread-safe. Errors: INVALID_ARGUMENT for a URL that does not parse (the
// message names the expected forms; credentials are never echoed); the store's errors.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "storage/object/object_store.h"

namespace kf::object {

absl::StatusOr<std::unique_ptr<ObjectStore>> OpenObjectStoreUrl(std::string_view url,
                                                                absl::Time deadline);

}  // namespace kf::object
