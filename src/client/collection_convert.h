// The wire form of the catalog (kingfisher.v1.CollectionInfo, ddl.proto) to the client API's
// kingfisher::CollectionInfo: enums become the names the public header documents.
//
// Pure functions: thread-safe, no errors (an enum value this client does not know becomes
// "UNKNOWN(<n>)", so a newer server still reads).
#pragma once

#include <string>

#include "kingfisher/collections.h"
#include "kingfisher/v1/ddl.pb.h"

namespace kf::client {

std::string MetricName(kingfisher::v1::MetricType metric);           // L2 | IP | COSINE
std::string CollectionStateName(kingfisher::v1::CollectionState s);  // CREATING | CREATED | ...
std::string PartitionStateName(kingfisher::v1::PartitionState s);    // CREATING | CREATED | ...

kingfisher::CollectionInfo ToCollectionInfo(const kingfisher::v1::CollectionInfo& info);

}  // namespace kf::client
