#include "cli/args.h"

#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"

namespace kf::cli {

absl::StatusOr<kingfisher::DeliverPolicy> PolicyFromFlags(const std::optional<std::string>& from,
                                                          const std::optional<std::string>& after) {
  if (from && after) return absl::InvalidArgumentError("--from and --after are exclusive");
  if (after) {
    auto id = MessageId::FromText(*after);
    if (!id.ok() || !id->valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--after: not a message id: \"", ToAbsl(*after), "\""));
    }
    return kingfisher::DeliverPolicy::StartAfter(*id);
  }
  if (!from || *from == "latest") return kingfisher::DeliverPolicy::Latest();
  if (*from == "earliest") return kingfisher::DeliverPolicy::All();
  auto id = MessageId::FromText(*from);
  if (!id.ok() || !id->valid()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--from: expected earliest, latest or a message id, got \"", ToAbsl(*from), "\""));
  }
  return kingfisher::DeliverPolicy::StartFrom(*id);
}

ParseResult ParseArgs(const std::vector<std::string>& argv, Args* args) {
  CLI::App app("kfctl: command-line client of the Kingfisher streaming WAL", "kfctl");
  app.set_help_all_flag("--help-all", "Print help for every subcommand");
  app.add_option("--endpoint", args->endpoint, "host:port of the server")->capture_default_str();
  app.add_option("--timeout", args->timeout_seconds,
                 "deadline in seconds of one operation (an append with its retries, a status "
                 "call)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
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

  if (*produce) {
    args->command = Args::Command::kProduce;
  } else if (*consume) {
    args->command = Args::Command::kConsume;
    auto policy =
        PolicyFromFlags(from_opt->count() ? std::optional<std::string>(from) : std::nullopt,
                        after_opt->count() ? std::optional<std::string>(after) : std::nullopt);
    if (!policy.ok()) {
      result.err = absl::StrCat("kfctl: usage error: ", policy.status().message(), "\n");
      result.exit_code = kExitUsage;
      return result;
    }
    c.policy = *policy;
    if (limit_opt->count()) c.limit = limit;
    if (idle_opt->count()) c.idle_timeout_seconds = idle;
  } else if (*status) {
    args->command = Args::Command::kStatus;
  }
  return result;
}

}  // namespace kf::cli
