// Command-line parsing of kfctl (docs/semantics.md §8): global flags and the produce / consume /
// status / collection {create,drop,describe,list} / insert / delete subcommands, parsed with CLI11
// into plain structs and validated (a bad --from, collection name or --pks list is a usage error
// here, not a server error later).
//
// Thread-safety: pure functions. Errors: ParseArgs never exits the process; it returns what
// the caller should print and the exit code (0 for --help, 2 for usage errors).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kingfisher/client.h"
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
  // Nothing at all for this long, not even a TimeTick (a live stream delivers one every 200 ms,
  // docs/semantics.md §3): stderr says the server is silent, once, until something arrives.
  // Not a flag; tests shorten it.
  double silence_notice_seconds = 3;
};

// collection create / drop / describe (name only for the last two).
struct CollectionArgs {
  std::string name;
  uint32_t dim = 0;
  uint32_t shards = 1;
  std::string metric = "L2";
};

struct InsertArgs {
  std::string collection;
  std::optional<uint64_t> rows;  // --rows N: N random vectors
  std::string file;              // --file PATH (.npy or .csv); exactly one of the two
  bool txn = false;
  std::string partition;  // "" = the default partition
  // Not a flag: how often progress goes to stderr (tests set zero: every ack).
  absl::Duration progress_interval = absl::Seconds(1);
};

struct DeleteArgs {
  std::string collection;
  std::vector<int64_t> pks;
};

// search NAME (--vector V | --file PATH) and get NAME --pks: the read options of search.h.
struct ReadArgs {
  std::string collection;
  std::string consistency = "bounded";  // strong | session | bounded | eventually
  uint64_t timestamp = 0;               // --timestamp T (session: the last write's timetick)
  uint64_t staleness_ms = 1000;         // bounded
};

struct SearchArgs : ReadArgs {
  std::vector<float> vector;  // --vector 0.1,0.2,...: one query
  std::string file;           // --file PATH (.npy or .csv): one query per row
  uint32_t topk = 10;
  std::string partition;  // "" = every partition
  uint32_t nprobe = 0;    // IVF lists per indexed chunk; 0 = the server's default
};

struct GetArgs : ReadArgs {
  std::vector<int64_t> pks;
};

// kfctl replicate configure: "ID=ENDPOINT" of the primary and of each secondary.
struct ReplicateArgs {
  std::string primary;
  std::vector<std::string> secondaries;
  std::string promote;  // kfctl replicate promote ID
  bool force = false;   // promote --force: failover, without the primary
};

struct Args {
  enum class Command {
    kNone,
    kProduce,
    kConsume,
    kStatus,
    kCollectionCreate,
    kCollectionDrop,
    kCollectionDescribe,
    kCollectionList,
    kFlush,
    kInsert,
    kDelete,
    kSearch,
    kGet,
    kReplicateConfigure,
    kReplicateStatus,
    kReplicatePromote,
  };
  std::string endpoint = "127.0.0.1:19530";
  double timeout_seconds = 30;
  // --tls, --tls-ca, --tls-cert, --tls-key (docs/security.md).
  kingfisher::TlsOptions tls;
  Command command = Command::kNone;
  ProduceArgs produce;
  ConsumeArgs consume;
  CollectionArgs collection;
  InsertArgs insert;
  DeleteArgs del;
  SearchArgs search;
  GetArgs get;
  ReplicateArgs replicate;
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

// "0.1,-2,3e-3": comma-separated finite floats. INVALID_ARGUMENT naming the bad item otherwise.
absl::StatusOr<std::vector<float>> ParseVector(std::string_view text);

// "1,2,-3": comma-separated decimal int64s, nothing else (no spaces, no empty items, no '+',
// no duplicates). INVALID_ARGUMENT naming the bad item otherwise.
absl::StatusOr<std::vector<int64_t>> ParsePkList(std::string_view text);

}  // namespace kf::cli
