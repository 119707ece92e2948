#include "cli/commands.h"

#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "cli/command_util.h"
#include "cli/render.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "kingfisher/client.h"
#include "message/validate.h"

namespace kf::cli {
namespace {

// The collection id of a collection vchannel "<pchannel>_<id>v<shard>"; 0 for raw vchannels.
int64_t CollectionIdOf(std::string_view vchannel) {
  auto parsed = ParseVChannel(vchannel);
  return parsed.ok() && parsed->has_value() ? (*parsed)->collection_id : 0;
}

}  // namespace

void PrintError(std::FILE* err, const absl::Status& s) {
  std::string code(absl::StatusCodeToString(s.code()));
  StreamingCode sc = GetStreamingCode(s);
  std::string line = "kfctl: " + code;
  std::string_view sc_name = StreamingCodeName(sc);
  if (sc_name != code && sc != StreamingCode::kOk) {
    line += " (" + std::string(sc_name) + ")";
  }
  line += ": " + std::string(ToStd(s.message())) + "\n";
  std::fputs(line.c_str(), err);
  std::fflush(err);
}

namespace {

using AppendFn = std::function<void(kingfisher::Message, kingfisher::AppendCallback)>;
using AckFn = std::function<void(uint64_t index, const kingfisher::AppendResult&)>;

// Appends p.count Insert messages (p.rows random rows of p.dim each) through `append`, at most
// p.concurrency in flight; `on_ack` runs once per acknowledged message, one at a time. Stops
// sending at the first failure and returns it once everything in flight has completed.
absl::Status AppendInserts(const ProduceArgs& p, const AppendFn& append, const AckFn& on_ack) {
  std::mt19937_64 rng(std::random_device{}());
  const int64_t pk_base = static_cast<int64_t>(rng() % (int64_t{1} << 40)) + 1;
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const int64_t collection_id = CollectionIdOf(p.vchannel);

  absl::Mutex mu;
  uint64_t in_flight = 0;
  absl::Status first_error;
  for (uint64_t i = 0; i < p.count; ++i) {
    {
      absl::MutexLock l(&mu);
      auto room = [&]() { return in_flight < p.concurrency || !first_error.ok(); };
      mu.Await(absl::Condition(&room));
      if (!first_error.ok()) break;
      ++in_flight;
    }
    kingfisher::Rows rows{.collection_id = collection_id, .dim = p.dim};
    for (uint32_t r = 0; r < p.rows; ++r) {
      rows.pks.push_back(pk_base + static_cast<int64_t>(i * p.rows + r));
      for (uint32_t d = 0; d < p.dim; ++d) rows.vectors.push_back(unit(rng));
    }
    absl::StatusOr<kingfisher::Message> message = kingfisher::InsertMessage(p.vchannel, rows);
    if (!message.ok()) {
      absl::MutexLock l(&mu);
      first_error = message.status();
      --in_flight;
      break;
    }
    append(*std::move(message), [&, i](absl::StatusOr<kingfisher::AppendResult> r) {
      absl::MutexLock l(&mu);
      if (r.ok()) {
        on_ack(i, *r);
      } else if (first_error.ok()) {
        first_error = r.status();
      }
      --in_flight;
    });
  }
  absl::MutexLock l(&mu);
  auto drained = [&]() { return in_flight == 0; };
  mu.Await(absl::Condition(&drained));
  return first_error;
}

// --txn: every message in one transaction; the acks are printed only once the commit is
// acknowledged (with --rollback: nothing is printed once the rollback is).
absl::Status ProduceInTxn(const ProduceArgs& p, kingfisher::Producer* producer, std::FILE* out) {
  auto txn = producer->BeginTxn(p.vchannel);
  if (!txn.ok()) return txn.status();
  std::vector<kingfisher::AppendResult> acks(p.count);
  absl::Status appended = AppendInserts(
      p,
      [&](kingfisher::Message m, kingfisher::AppendCallback done) {
        (*txn)->AppendAsync(std::move(m), std::move(done));
      },
      [&](uint64_t i, const kingfisher::AppendResult& r) { acks[i] = r; });
  if (!appended.ok()) {
    (void)(*txn)->Rollback();  // best effort: the body's error is what the user needs
    return appended;
  }
  if (p.rollback) return (*txn)->Rollback();
  if (auto commit = (*txn)->Commit(); !commit.ok()) return commit.status();
  for (const auto& a : acks) PrintLine(out, RenderAck(a, p.vchannel));
  return absl::OkStatus();
}

}  // namespace

int RunProduce(const Args& args, std::FILE* out, std::FILE* err) {
  const ProduceArgs& p = args.produce;
  if (p.rollback && !p.txn) {
    std::fputs("kfctl: usage error: --rollback needs --txn\n", err);
    return kExitUsage;
  }
  if (auto pchannel = PChannelOfVChannel(p.vchannel); !pchannel.ok()) {
    PrintError(err, pchannel.status());
    return kExitUsage;
  }
  auto client = ConnectFor(args);
  if (!client.ok()) {
    PrintError(err, client.status());
    return kExitUsage;
  }
  auto producer = (*client)->CreateProducer();
  if (!producer.ok()) {
    PrintError(err, producer.status());
    return kExitServerError;
  }
  absl::Status s = p.txn ? ProduceInTxn(p, producer->get(), out)
                         : AppendInserts(
                               p,
                               [&](kingfisher::Message m, kingfisher::AppendCallback done) {
                                 (*producer)->AppendAsync(std::move(m), std::move(done));
                               },
                               [&](uint64_t, const kingfisher::AppendResult& r) {
                                 PrintLine(out, RenderAck(r, p.vchannel));
                               });
  (*producer)->Close();
  if (!s.ok()) {
    PrintError(err, s);
    return kExitServerError;
  }
  return kExitOk;
}

int RunConsume(const Args& args, std::FILE* out, std::FILE* err) {
  const ConsumeArgs& c = args.consume;
  auto client = ConnectFor(args);
  if (!client.ok()) {
    PrintError(err, client.status());
    return kExitUsage;
  }
  kingfisher::ConsumerOptions o;
  o.vchannel = c.vchannel;
  o.policy = c.policy;
  auto consumer = (*client)->CreateConsumer(o);
  if (!consumer.ok()) {
    PrintError(err, consumer.status());
    // A vchannel that names no pchannel is the user's input: a usage error.
    return consumer.status().code() == absl::StatusCode::kInvalidArgument ? kExitUsage
                                                                          : kExitServerError;
  }
  auto idle_deadline = [&c]() {
    return c.idle_timeout_seconds ? kingfisher::Clock::now() +
                                        std::chrono::duration_cast<kingfisher::Duration>(
                                            std::chrono::duration<double>(*c.idle_timeout_seconds))
                                  : kingfisher::Deadline::max();
  };
  const auto silence = std::chrono::duration_cast<kingfisher::Duration>(
      std::chrono::duration<double>(c.silence_notice_seconds));
  uint64_t printed = 0;
  bool silent = false;  // the notice below was printed and nothing arrived since
  kingfisher::Deadline deadline = idle_deadline();
  while (!c.limit || printed < *c.limit) {
    // Waits in slices of `silence`: the consumer reconnects by itself, so without them a server
    // that went away would leave the user looking at nothing.
    const kingfisher::Deadline now = kingfisher::Clock::now();
    const bool last_slice = deadline - now <= silence;  // this wait ends at the idle deadline
    auto m = (*consumer)->Next(last_slice ? deadline : now + silence);
    if (!m.ok()) {
      if (m.status().code() != absl::StatusCode::kDeadlineExceeded) {
        PrintError(err, m.status());
        return kExitServerError;
      }
      if (last_slice) break;  // idle: done
      if (!silent) {
        std::fprintf(err,
                     "kfctl: consume: nothing from the server for %g s, not even a timetick; "
                     "still waiting (%s)\n",
                     c.silence_notice_seconds, std::string(ToStd(m.status().message())).c_str());
        std::fflush(err);
        silent = true;
      }
      continue;
    }
    if (silent) {
      std::fputs("kfctl: consume: the server answers again\n", err);
      std::fflush(err);
      silent = false;
    }
    if (m->type == kingfisher::MessageType::kTimeTick) {
      if (c.with_timeticks) PrintLine(out, RenderConsumed(*m));
      continue;  // neither counts nor resets the idle timer
    }
    PrintLine(out, RenderConsumed(*m));
    ++printed;
    deadline = idle_deadline();
  }
  (*consumer)->Close();
  return kExitOk;
}

int RunStatus(const Args& args, std::FILE* out, std::FILE* err) {
  auto client = ConnectFor(args);
  if (!client.ok()) {
    PrintError(err, client.status());
    return kExitUsage;
  }
  auto s = (*client)->GetStatus();
  if (!s.ok()) {
    PrintError(err, s.status());
    return kExitServerError;
  }
  PrintLine(out, RenderStatus(*s));
  return kExitOk;
}

}  // namespace kf::cli
