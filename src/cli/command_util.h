// What every kfctl subcommand shares: connecting with the global flags and printing a JSON
// line (flushed, so a killed kfctl has printed every ack it received).
//
// Thread-safety: PrintLine may be called from any thread but not concurrently on one stream
// (callers serialise). Ownership: borrows the FILE streams. Errors: see each function.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cli/args.h"
#include "kingfisher/client.h"

namespace kf::cli {

void PrintLine(std::FILE* out, const std::string& line);

// A client of args.endpoint whose appends, status calls and DDL all use args.timeout_seconds.
// Errors: those of Client::Connect.
absl::StatusOr<std::unique_ptr<kingfisher::Client>> ConnectFor(const Args& args);

}  // namespace kf::cli
