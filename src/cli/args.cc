#include "cli/args.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/collection_rules.h"
#include "common/absl_compat.h"
#include "message/payload.h"

namespace kf::cli {

namespace {

ParseResult UsageError(absl::string_view message) {
  ParseResult r;
  r.err = absl::StrCat("kfctl: usage error: ", message, "\n");
  r.exit_code = kExitUsage;
  return r;
}

}  // namespace

absl::StatusOr<kingfisher::DeliverPolicy> PolicyFromFlags(const std::optional<std::string>& from,
                                                          const std::optional<std::string>& after) {
  if (from && after) return absl::InvalidArgumentError("--from and --after are exclusive");
  if (after) {
    auto id = kingfisher::MessageId::FromText(*after);
    if (!id.ok() || !id->valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--after: not a message id: \"", ToAbsl(*after), "\""));
    }
    return kingfisher::DeliverPolicy::StartAfter(*id);
  }
  if (!from || *from == "latest") return kingfisher::DeliverPolicy::Latest();
  if (*from == "earliest") return kingfisher::DeliverPolicy::All();
  auto id = kingfisher::MessageId::FromText(*from);
  if (!id.ok() || !id->valid()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--from: expected earliest, latest or a message id, got \"", ToAbsl(*from), "\""));
  }
  return kingfisher::DeliverPolicy::StartFrom(*id);
}

absl::StatusOr<std::vector<float>> ParseVector(std::string_view text) {
  std::vector<float> out;
  size_t pos = 0;
  while (true) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    float v = 0;
    if (item.empty() || item.find_first_of(" \t") != std::string_view::npos ||
        !absl::SimpleAtof(ToAbsl(item), &v) || !std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--vector: component ", out.size() + 1, " \"", ToAbsl(item.substr(0, 32)),
                       "\" is not a finite number (want a comma-separated list like 0.1,-2,3e-3)"));
    }
    out.push_back(v);
    if (comma == text.size()) break;
    pos = comma + 1;
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> ParsePkList(std::string_view text) {
  std::vector<int64_t> out;
  absl::flat_hash_set<int64_t> seen;
  size_t pos = 0;
  while (true) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    // SimpleAtoi alone would also take blanks around the number and a '+'.
    const std::string_view digits = item.substr(!item.empty() && item[0] == '-' ? 1 : 0);
    int64_t pk = 0;
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos ||
        !absl::SimpleAtoi(ToAbsl(item), &pk)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--pks: item ", out.size() + 1, " \"", ToAbsl(item.substr(0, 32)),
                       "\" is not an int64 (want a comma-separated list like 1,2,-3)"));
    }
    if (!seen.insert(pk).second) {
      return absl::InvalidArgumentError(absl::StrCat("--pks: duplicate pk ", pk));
    }
    out.push_back(pk);
    if (comma == text.size()) break;
    pos = comma + 1;
  }
  return out;
}

namespace {

// A CLI11 check of a collection, partition or database name (client/collection_rules.h).
CLI::Validator NameCheck(std::string what) {
  return CLI::Validator(
      [what](std::string& v) -> std::string {
        absl::Status s = client::CheckCollectionName(what, v);
        return s.ok() ? "" : std::string(s.message());
      },
      "NAME");
}

}  // namespace

ParseResult ParseArgs(const std::vector<std::string>& argv, Args* args) {
  CLI::App app("kfctl: command-line client of the Kingfisher streaming WAL", "kfctl");
  app.set_help_all_flag("--help-all", "Print help for every subcommand");
  app.add_option("--endpoint", args->endpoint, "host:port of the server")->capture_default_str();
  app.add_option("--timeout", args->timeout_seconds,
                 "deadline in seconds of one operation (an append with its retries, a status "
                 "call, a collection DDL)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--tls", args->tls.enabled,
               "connect over TLS, verifying the server with the system's CA certificates");
  app.add_option("--tls-ca", args->tls.ca_file,
                 "PEM file of the CA certificates that verify the server (implies --tls)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-cert", args->tls.cert_file,
                 "PEM certificate chain of this client, for servers that require one (implies "
                 "--tls; needs --tls-key)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", args->tls.key_file, "PEM private key of --tls-cert")
      ->check(CLI::ExistingFile);
  app.require_subcommand(1);

  ProduceArgs& p = args->produce;
  CLI::App* produce =
      app.add_subcommand("produce", "append Insert messages, one JSON line per ack");
  produce->add_option("--vchannel", p.vchannel, "target vchannel")->required();
  produce->add_option("--count", p.count, "messages to append")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  produce->add_option("--rows", p.rows, "rows per message")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  produce->add_option("--dim", p.dim, "vector dimension")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  produce->add_option("--concurrency", p.concurrency, "appends in flight")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI::Option* txn_opt = produce->add_flag(
      "--txn", p.txn,
      "append all messages in one transaction; the ack lines (with txn_id) are printed once "
      "the commit is acknowledged");
  produce
      ->add_flag("--rollback", p.rollback,
                 "with --txn: roll the transaction back instead of committing it; prints "
                 "nothing and exits 0 once the rollback is acknowledged")
      ->needs(txn_opt);

  ConsumeArgs& c = args->consume;
  std::string from, after;
  double idle = 0;
  uint64_t limit = 0;
  CLI::App* consume = app.add_subcommand("consume", "read a vchannel, one JSON line per message");
  consume->add_option("--vchannel", c.vchannel, "vchannel (or pchannel) to read")->required();
  CLI::Option* from_opt =
      consume->add_option("--from", from, "earliest | latest (default) | <message_id>");
  CLI::Option* after_opt = consume->add_option("--after", after, "start after <message_id>");
  after_opt->excludes(from_opt);
  CLI::Option* limit_opt =
      consume->add_option("--limit", limit, "exit after N messages")->check(CLI::NonNegativeNumber);
  CLI::Option* idle_opt =
      consume->add_option("--idle-timeout", idle, "exit after SECONDS without a message")
          ->check(CLI::NonNegativeNumber);
  consume->add_flag("--with-timeticks", c.with_timeticks, "also print TimeTick messages");

  CLI::App* status = app.add_subcommand("status", "print nodes and pchannel assignments");

  CLI::App* replicate = app.add_subcommand(
      "replicate", "cross-cluster replication: configure, status (docs/replication.md)");
  replicate->require_subcommand(1);
  CLI::App* rconfigure = replicate->add_subcommand(
      "configure", "make one cluster the primary of the others (an AlterReplicateConfig on each)");
  rconfigure->add_option("--primary", args->replicate.primary, "ID=ENDPOINT of the primary")
      ->required();
  rconfigure
      ->add_option("--secondary", args->replicate.secondaries,
                   "ID=ENDPOINT of a secondary (repeat for each)")
      ->required();
  CLI::App* rpromote = replicate->add_subcommand(
      "promote",
      "switchover: the secondary at --endpoint becomes the primary once its primary handed over "
      "everything it acknowledged; the primary becomes its secondary");
  rpromote->add_option("id", args->replicate.promote, "the secondary's cluster id")->required();
  rpromote->add_flag("--force", args->replicate.force,
                     "failover: the primary is gone; the secondary alone becomes a primary "
                     "without secondaries, losing what the primary acknowledged but had not "
                     "replicated (reconfigure the old primary as its secondary when it returns)");
  CLI::App* rstatus = replicate->add_subcommand(
      "status", "the endpoint's replicate configuration, roles, checkpoints and replicators");

  CollectionArgs& col = args->collection;
  CLI::App* collection = app.add_subcommand("collection", "create, drop, describe, list");
  collection->require_subcommand(1);
  CLI::App* create = collection->add_subcommand(
      "create", "create a collection; prints it (id, vchannels) as one JSON line");
  create->add_option("name", col.name, "collection name")
      ->required()
      ->check(NameCheck("collection"));
  create->add_option("--dim", col.dim, "vector dimension")
      ->required()
      ->check(CLI::Range(uint32_t{1}, kMaxDim));
  create->add_option("--shards", col.shards, "shards (vchannels)")
      ->capture_default_str()
      ->check(CLI::Range(uint32_t{1}, kMaxShards));
  create->add_option("--metric", col.metric, "L2 | IP | COSINE")
      ->capture_default_str()
      ->check(CLI::IsMember({"L2", "IP", "COSINE"}, CLI::ignore_case));
  CLI::App* drop = collection->add_subcommand("drop", "drop a collection; prints nothing");
  drop->add_option("name", col.name, "collection name")->required()->check(NameCheck("collection"));
  CLI::App* describe =
      collection->add_subcommand("describe", "print a collection as one JSON line");
  describe->add_option("name", col.name, "collection name")
      ->required()
      ->check(NameCheck("collection"));
  CLI::App* list = collection->add_subcommand("list", "print every collection as one JSON line");
  CLI::App* flush = app.add_subcommand(
      "flush",
      "seal a collection's growing segments and wait until they are in the object store under a "
      "committed checkpoint; prints each shard's flush and checkpoint timeticks as one JSON line");
  flush->add_option("name", col.name, "collection name")
      ->required()
      ->check(NameCheck("collection"));

  InsertArgs& ins = args->insert;
  uint64_t rows = 0;
  CLI::App* insert = app.add_subcommand(
      "insert",
      "insert rows into a collection (pks allocated by the coordinator), one JSON line per "
      "acknowledged message");
  insert->add_option("name", ins.collection, "collection name")
      ->required()
      ->check(NameCheck("collection"));
  CLI::Option* rows_opt =
      insert->add_option("--rows", rows, "insert N random vectors")->check(CLI::PositiveNumber);
  CLI::Option* file_opt =
      insert->add_option("--file", ins.file, "insert the vectors of a .npy or .csv file");
  rows_opt->excludes(file_opt);
  insert->add_flag("--txn", ins.txn,
                   "one transaction per shard (a transaction spans one vchannel): each shard's "
                   "rows commit together, shards one after another; ack lines are printed once "
                   "their shard committed");
  insert->add_option("--partition", ins.partition, "partition (default: _default)")
      ->check(NameCheck("partition"));

  DeleteArgs& del = args->del;
  std::string pks;
  CLI::App* del_cmd =
      app.add_subcommand("delete", "delete rows by pk, one JSON line per acknowledged message");
  del_cmd->add_option("name", del.collection, "collection name")
      ->required()
      ->check(NameCheck("collection"));
  del_cmd->add_option("--pks", pks, "comma-separated pks, e.g. 1,2,3")->required();

  // search / get: the read options of include/kingfisher/search.h.
  auto read_options = [](CLI::App* cmd, ReadArgs* r) {
    cmd->add_option("name", r->collection, "collection name")
        ->required()
        ->check(NameCheck("collection"));
    cmd->add_option("--consistency", r->consistency,
                    "strong | session | bounded | eventually (default bounded)")
        ->check(CLI::IsMember({"strong", "session", "bounded", "eventually"}, CLI::ignore_case));
    cmd->add_option("--timestamp", r->timestamp,
                    "read at this timetick (session: the timetick of your last write's ack)");
    cmd->add_option("--staleness-ms", r->staleness_ms, "bounded: how old T may be (default 1000)");
  };
  SearchArgs& srch = args->search;
  std::string vector_text;
  CLI::App* search_cmd = app.add_subcommand(
      "search", "search a collection, one JSON line per query: {\"query\":i,\"hits\":[...]}");
  read_options(search_cmd, &srch);
  CLI::Option* vector_opt =
      search_cmd->add_option("--vector", vector_text, "one query: comma-separated floats");
  CLI::Option* qfile_opt =
      search_cmd->add_option("--file", srch.file, "queries: the rows of a .npy or .csv file");
  vector_opt->excludes(qfile_opt);
  search_cmd->add_option("--topk", srch.topk, "hits per query, 1..16384 (default 10)")
      ->check(CLI::Range(1, 16384));
  search_cmd->add_option("--partition", srch.partition, "search one partition (default: all)")
      ->check(NameCheck("partition"));
  search_cmd
      ->add_option("--nprobe", srch.nprobe,
                   "search width: IVF lists probed per indexed chunk (default: the server's, 16)")
      ->check(CLI::Range(1, 65536));
  GetArgs& get = args->get;
  std::string get_pks;
  CLI::App* get_cmd = app.add_subcommand(
      "get", "the rows of pks, one JSON line per row: {\"pk\":..,\"vector\":[..]}");
  read_options(get_cmd, &get);
  get_cmd->add_option("--pks", get_pks, "comma-separated pks, e.g. 1,2,3")->required();

  ParseResult result;
  std::vector<std::string> rev(argv.rbegin(), argv.rend() - (argv.empty() ? 0 : 1));
  try {
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    int code = app.exit(e, out, err);
    result.out = out.str();
    result.err = err.str();
    result.exit_code = code == 0 ? kExitOk : kExitUsage;
    return result;
  }

  if (args->tls.cert_file.empty() != args->tls.key_file.empty()) {
    return UsageError("--tls-cert and --tls-key go together");
  }
  if (!args->tls.ca_file.empty() || !args->tls.cert_file.empty()) args->tls.enabled = true;

  if (*produce) {
    args->command = Args::Command::kProduce;
  } else if (*consume) {
    args->command = Args::Command::kConsume;
    auto policy =
        PolicyFromFlags(from_opt->count() ? std::optional<std::string>(from) : std::nullopt,
                        after_opt->count() ? std::optional<std::string>(after) : std::nullopt);
    if (!policy.ok()) return UsageError(policy.status().message());
    c.policy = *policy;
    if (limit_opt->count()) c.limit = limit;
    if (idle_opt->count()) c.idle_timeout_seconds = idle;
  } else if (*status) {
    args->command = Args::Command::kStatus;
  } else if (*rconfigure) {
    args->command = Args::Command::kReplicateConfigure;
  } else if (*rstatus) {
    args->command = Args::Command::kReplicateStatus;
  } else if (*rpromote) {
    args->command = Args::Command::kReplicatePromote;
  } else if (*create) {
    args->command = Args::Command::kCollectionCreate;
  } else if (*drop) {
    args->command = Args::Command::kCollectionDrop;
  } else if (*describe) {
    args->command = Args::Command::kCollectionDescribe;
  } else if (*list) {
    args->command = Args::Command::kCollectionList;
  } else if (*flush) {
    args->command = Args::Command::kFlush;
  } else if (*insert) {
    args->command = Args::Command::kInsert;
    if (!rows_opt->count() && !file_opt->count()) {
      return UsageError("insert needs --rows N or --file PATH");
    }
    if (rows_opt->count()) ins.rows = rows;
  } else if (*search_cmd) {
    args->command = Args::Command::kSearch;
    if (!vector_opt->count() && !qfile_opt->count()) {
      return UsageError("search needs --vector V or --file PATH");
    }
    if (vector_opt->count()) {
      auto parsed = ParseVector(vector_text);
      if (!parsed.ok()) return UsageError(parsed.status().message());
      srch.vector = *std::move(parsed);
    }
  } else if (*get_cmd) {
    args->command = Args::Command::kGet;
    auto parsed = ParsePkList(get_pks);
    if (!parsed.ok()) return UsageError(parsed.status().message());
    get.pks = *std::move(parsed);
  } else if (*del_cmd) {
    args->command = Args::Command::kDelete;
    auto parsed = ParsePkList(pks);
    if (!parsed.ok()) return UsageError(parsed.status().message());
    del.pks = *std::move(parsed);
  }
  return result;
}

}  // namespace kf::cli
