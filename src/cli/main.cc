// kfctl: the command-line client of Kingfisher (docs/semantics.md §8). See cli/args.h for the flags
// and cli/commands.h for the output contract.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "trace/env.h"

int main(int argc, char** argv) {
  // Debian's abseil keeps mutex deadlock detection on; a CLI has no use for its cost.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  std::vector<std::string> argv_vec(argv, argv + argc);
  kf::cli::Args args;
  kf::cli::ParseResult parsed = kf::cli::ParseArgs(argv_vec, &args);
  if (parsed.exit_code) {
    std::fputs(parsed.out.c_str(), stdout);
    std::fputs(parsed.err.c_str(), stderr);
    return *parsed.exit_code;
  }
  // Flushes spans when it goes out of scope, before the process exits.
  kf::trace::TracingHandle tracing = kf::trace::InitTracingFromEnv("kfctl");
  switch (args.command) {
    case kf::cli::Args::Command::kProduce:
      return kf::cli::RunProduce(args, stdout, stderr);
    case kf::cli::Args::Command::kConsume:
      return kf::cli::RunConsume(args, stdout, stderr);
    case kf::cli::Args::Command::kStatus:
      return kf::cli::RunStatus(args, stdout, stderr);
    case kf::cli::Args::Command::kCollectionCreate:
      return kf::cli::RunCollectionCreate(args, stdout, stderr);
    case kf::cli::Args::Command::kCollectionDrop:
      return kf::cli::RunCollectionDrop(args, stdout, stderr);
    case kf::cli::Args::Command::kCollectionDescribe:
      return kf::cli::RunCollectionDescribe(args, stdout, stderr);
    case kf::cli::Args::Command::kCollectionList:
      return kf::cli::RunCollectionList(args, stdout, stderr);
    case kf::cli::Args::Command::kFlush:
      return kf::cli::RunFlush(args, stdout, stderr);
    case kf::cli::Args::Command::kInsert:
      return kf::cli::RunInsert(args, stdout, stderr);
    case kf::cli::Args::Command::kDelete:
      return kf::cli::RunDelete(args, stdout, stderr);
    case kf::cli::Args::Command::kSearch:
      return kf::cli::RunSearch(args, stdout, stderr);
    case kf::cli::Args::Command::kGet:
      return kf::cli::RunGet(args, stdout, stderr);
    case kf::cli::Args::Command::kReplicateConfigure:
      return kf::cli::RunReplicateConfigure(args, stdout, stderr);
    case kf::cli::Args::Command::kReplicateStatus:
      return kf::cli::RunReplicateStatus(args, stdout, stderr);
    case kf::cli::Args::Command::kReplicatePromote:
      return kf::cli::RunReplicatePromote(args, stdout, stderr);
    case kf::cli::Args::Command::kNone:
      break;
  }
  std::fputs(
      "kfctl: a subcommand is required (produce, consume, status, collection, flush, insert, "
      "delete, search, get, replicate)\n",
      stderr);
  return kf::cli::kExitUsage;
}
