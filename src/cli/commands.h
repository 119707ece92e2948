// The kfctl subcommands. Each returns the process exit code (args.h: 0 ok, 1 server/runtime
// error, 2 usage error) and writes JSON lines to `out` (flushed per line, so a killed kfctl has
// printed every ack it received) and errors to `err` as "kfctl: <CODE>: <message>".
// Thread-safety: one command per process. Ownership: borrows the FILE streams.
#pragma once

#include <cstdio>

#include "absl/status/status.h"
#include "cli/args.h"

namespace kf::cli {

int RunProduce(const Args& args, std::FILE* out, std::FILE* err);
int RunConsume(const Args& args, std::FILE* out, std::FILE* err);
int RunStatus(const Args& args, std::FILE* out, std::FILE* err);

// collection_commands.cc: create prints the collection, drop prints nothing, describe prints
// the collection, list prints {"collections":[...]} (render.h).
int RunCollectionCreate(const Args& args, std::FILE* out, std::FILE* err);
int RunCollectionDrop(const Args& args, std::FILE* out, std::FILE* err);
// flush NAME: seals the collection's growing segments and waits until they are in the object
// store; one JSON line (RenderFlushed).
int RunFlush(const Args& args, std::FILE* out, std::FILE* err);
int RunCollectionDescribe(const Args& args, std::FILE* out, std::FILE* err);
int RunCollectionList(const Args& args, std::FILE* out, std::FILE* err);

// insert_command.cc: one RenderRowsAck line per acknowledged message; progress on `err`.
// A bad or mismatched vector file is a usage error (2), found before anything is sent.
int RunInsert(const Args& args, std::FILE* out, std::FILE* err);
int RunDelete(const Args& args, std::FILE* out, std::FILE* err);

// search_command.cc: search prints one RenderSearchHits line per query, get one RenderRow line
// per visible row. A bad query file is a usage error (2), found before anything is sent.
int RunSearch(const Args& args, std::FILE* out, std::FILE* err);
int RunGet(const Args& args, std::FILE* out, std::FILE* err);

// replicate_commands.cc (docs/replication.md "Operating it"). configure asks each endpoint
// which cluster it is and which pchannels it has, checks the star, and alters the secondaries'
// configuration first, then the primary's; one JSON line per cluster. status prints the
// endpoint's configuration and its node's roles, checkpoints and replicators as one JSON line.
int RunReplicateConfigure(const Args& args, std::FILE* out, std::FILE* err);
int RunReplicateStatus(const Args& args, std::FILE* out, std::FILE* err);
// promote ID: the secondary ID at --endpoint and its primary swap roles (a switchover, both up;
// one primary and one secondary): the primary is altered first (it stops taking writes), kfctl
// waits until each of its pchannels handed over everything it acknowledged, then the secondary
// is altered; one JSON line per cluster.
int RunReplicatePromote(const Args& args, std::FILE* out, std::FILE* err);

// "kfctl: INVALID_ARGUMENT: <message>\n" on `err`.
void PrintError(std::FILE* err, const absl::Status& s);

}  // namespace kf::cli
