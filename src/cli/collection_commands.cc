// kfctl collection create | drop | describe | list and kfctl flush: one Client call each, one
// JSON line out.
#include <cstdio>

#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/render.h"
#include "kingfisher/client.h"

namespace kf::cli {
namespace {

// Connects, runs `call` and maps its status onto the exit code (1 for anything the server or
// the connection said: the arguments were checked by ParseArgs).
template <typename Call>
int WithClient(const Args& args, std::FILE* err, Call&& call) {
  auto client = ConnectFor(args);
  if (!client.ok()) {
    PrintError(err, client.status());
    return kExitUsage;
  }
  absl::Status s = call(**client);
  if (!s.ok()) {
    PrintError(err, s);
    return kExitServerError;
  }
  return kExitOk;
}

}  // namespace

int RunCollectionCreate(const Args& args, std::FILE* out, std::FILE* err) {
  const CollectionArgs& c = args.collection;
  return WithClient(args, err, [&](kingfisher::Client& client) {
    auto info = client.CreateCollection(
        {.name = c.name, .dim = c.dim, .metric = c.metric, .shards = c.shards});
    if (info.ok()) PrintLine(out, RenderCollection(*info));
    return info.status();
  });
}

int RunCollectionDrop(const Args& args, std::FILE* /*out*/, std::FILE* err) {
  return WithClient(args, err, [&](kingfisher::Client& client) {
    return client.DropCollection(args.collection.name);
  });
}

int RunFlush(const Args& args, std::FILE* out, std::FILE* err) {
  return WithClient(args, err, [&](kingfisher::Client& client) {
    auto flushed = client.Flush(args.collection.name);
    if (flushed.ok()) PrintLine(out, RenderFlushed(args.collection.name, *flushed));
    return flushed.status();
  });
}

int RunCollectionDescribe(const Args& args, std::FILE* out, std::FILE* err) {
  return WithClient(args, err, [&](kingfisher::Client& client) {
    auto info = client.DescribeCollection(args.collection.name);
    if (info.ok()) PrintLine(out, RenderCollection(*info));
    return info.status();
  });
}

int RunCollectionList(const Args& args, std::FILE* out, std::FILE* err) {
  return WithClient(args, err, [&](kingfisher::Client& client) {
    auto list = client.ListCollections();
    if (list.ok()) PrintLine(out, RenderCollections(*list));
    return list.status();
  });
}

}  // namespace kf::cli
