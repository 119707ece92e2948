// Strict parsing of the two S3 response bodies the S3 store reads: ListObjectsV2's
// ListBucketResult and the <Error> document. A small XML reader of our own (elements,
// attributes, text, the five named entities and numeric character references); comments,
// CDATA, DOCTYPE and processing instructions other than the leading <?xml ...?> are rejected,
// as is any structure the S3 documents do not have (a missing Key or Size, a Size that is not a
// number, a truncated page without a continuation token).
//
// Thread-safety: pure functions. Errors: INTERNAL for a body that does not parse (the server
// sent something we do not understand; retrying will not help).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/object/object_store.h"

namespace kf::object {

struct ListObjectsPage {
  std::vector<ObjectInfo> objects;  // etag without quotes
  bool truncated = false;
  std::string next_continuation_token;  // set when truncated
};
absl::StatusOr<ListObjectsPage> ParseListObjectsV2(std::string_view xml);

struct S3ErrorBody {
  std::string code;  // e.g. "NoSuchKey", "PreconditionFailed", "SlowDown"
  std::string message;
};
absl::StatusOr<S3ErrorBody> ParseS3Error(std::string_view xml);

}  // namespace kf::object
