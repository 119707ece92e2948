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

// "kfctl: INVALID_ARGUMENT: <message>\n" on `err`.
void PrintError(std::FILE* err, const absl::Status& s);

}  // namespace kf::cli
