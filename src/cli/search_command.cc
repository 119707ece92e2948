// kfctl search and kfctl get (docs/search.md): one Client::Search / Client::Get, one JSON line
// per query or row.
#include <cstdio>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/render.h"
#include "cli/vector_file.h"
#include "kingfisher/client.h"

namespace kf::cli {
namespace {

kingfisher::ReadOptions ReadOptionsOf(const ReadArgs& r) {
  kingfisher::ReadOptions o;
  o.consistency = kingfisher::ParseConsistency(r.consistency).value_or(o.consistency);
  o.timestamp = kingfisher::TimeTick(r.timestamp);
  o.staleness = std::chrono::milliseconds(r.staleness_ms);
  return o;
}

}  // namespace

int RunSearch(const Args& args, std::FILE* out, std::FILE* err) {
  const SearchArgs& s = args.search;
  std::vector<float> queries = s.vector;
  if (!s.file.empty()) {
    absl::StatusOr<Vectors> file = ReadVectorFile(s.file);
    if (!file.ok()) {
      PrintError(err, file.status());
      return kExitUsage;
    }
    queries = std::move(file->values);
  }
  auto client = ConnectFor(args);
  if (!client.ok()) {
    PrintError(err, client.status());
    return kExitUsage;
  }
  kingfisher::SearchOptions options;
  static_cast<kingfisher::ReadOptions&>(options) = ReadOptionsOf(s);
  options.topk = s.topk;
  options.partition = s.partition;
  options.nprobe = s.nprobe;
  auto result = (*client)->Search(s.collection, queries, options);
  if (!result.ok()) {
    PrintError(err, result.status());
    return kExitServerError;
  }
  for (size_t q = 0; q < result->hits.size(); ++q) {
    PrintLine(out, RenderSearchHits(q, result->hits[q], result->timestamp));
  }
  return kExitOk;
}

int RunGet(const Args& args, std::FILE* out, std::FILE* err) {
  const GetArgs& g = args.get;
  auto client = ConnectFor(args);
  if (!client.ok()) {
    PrintError(err, client.status());
    return kExitUsage;
  }
  auto result = (*client)->Get(g.collection, g.pks, ReadOptionsOf(g));
  if (!result.ok()) {
    PrintError(err, result.status());
    return kExitServerError;
  }
  for (const kingfisher::Row& row : result->rows) PrintLine(out, RenderRow(row, result->timestamp));
  return kExitOk;
}

}  // namespace kf::cli
