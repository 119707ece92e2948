// Command-line parsing of kfctl (SPEC §8): global flags and the produce / consume / status
// subcommands, parsed with CLI11 into plain structs and validated (a bad --from is a usage
// error here, not a server error later).
//
// Thread-safety: pure functions. Errors: ParseArgs never exits the process; it returns what
// the caller should print and the exit code (0 for --help, 2 for usage errors).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kingfisher/consumer.h"

namespace kf::cli {

// Exit codes of kfctl.
inline constexpr int kExitOk = 0;
inline constexpr int kExitServerError = 1;
inline constexpr int kExitUsage = 2;

struct ProduceArgs {
  std::string vchannel;
  uint64_t count = 1;
  uint32_t rows = 1;
  uint32_t dim = 8;
  uint32_t concurrency = 1;
  bool txn = false;
  bool rollback = false;  // only with txn: roll back instead of committing
};

struct ConsumeArgs {
  std::string vchannel;
  kingfisher::DeliverPolicy policy = kingfisher::DeliverPolicy::Latest();
  std::optional<uint64_t> limit;
  std::optional<double> idle_timeout_seconds;
  bool with_timeticks = false;
};

struct Args {
  enum class Command { kNone, kProduce, kConsume, kStatus };
  std::string endpoint = "127.0.0.1:19530";
  double timeout_seconds = 30;
  Command command = Command::kNone;
  ProduceArgs produce;
  ConsumeArgs consume;
};

struct ParseResult {
  // Set when the program should stop now (help, usage error) with this code.
  std::optional<int> exit_code;
  std::string out;  // for stdout (help text)
  std::string err;  // for stderr (usage error)
};

ParseResult ParseArgs(const std::vector<std::string>& argv, Args* args);

// "earliest" | "latest" | a MessageId text for --from, a MessageId text for --after.
// INVALID_ARGUMENT (a usage error) otherwise.
absl::StatusOr<kingfisher::DeliverPolicy> PolicyFromFlags(const std::optional<std::string>& from,
                                                          const std::optional<std::string>& after);

}  // namespace kf::cli
