// Tracing end to end (TRACING.md §8 scenario 18 for the autocommit shape; issue acceptance):
// real processes, the real OTLP/HTTP exporter, and a decoder we did not write (protobufjs with
// the upstream OTLP protos, tests/otlp). `kfctl produce`, then `kfctl consume` twice: once from
// the write-ahead buffer (tailing: no server-side consume span) and, after a server restart
// empties the buffer, once from the log (catch-up). Per message there must be ONE trace:
//   wal.autocommit > wal.dist_append > wal.append > wal.appendimpl > wal.dist_consume  (tailing)
//                                                  wal.appendimpl > wal.catchup_consume >
//                                                                   wal.dist_consume  (catch-up)
// and TimeTick messages must produce no spans.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kfctl_runner.h"
#include "otlp/otlp_receiver.h"
#include "server_process.h"

namespace kf::testing {
namespace {

constexpr char kVChannel[] = "kf-dml_2_traced";
constexpr int kMessages = 3;

const std::set<std::string> kVocabulary = {
    "wal.autocommit",      "wal.txn",         "wal.broadcast",       "wal.append",
    "wal.appendimpl",      "wal.dist_append", "wal.catchup_consume", "wal.dist_consume",
    "replicate.secondary", "wal.bc_callback"};

constexpr int kInternal = 1, kProducer = 4, kConsumer = 5;

// The message_id of the first ack line kfctl produce printed.
std::optional<std::string> FirstMessageId(const KfctlResult& produced) {
  if (produced.lines.empty()) return std::nullopt;
  const nlohmann::json& id = produced.lines.front()["message_id"];
  if (!id.is_string()) return std::nullopt;
  return id.get<std::string>();
}

KfctlResult Consume(const std::string& dir, const std::string& endpoint,
                    std::vector<std::string> position,
                    const std::map<std::string, std::string>& env) {
  std::vector<std::string> args = {"--endpoint", endpoint,     "--timeout", "20",
                                   "consume",    "--vchannel", kVChannel};
  args.insert(args.end(), position.begin(), position.end());
  args.insert(args.end(), {"--limit", std::to_string(kMessages), "--idle-timeout", "10"});
  return RunKfctl(dir, args, env);
}

TEST(TracingE2E, ProduceThenConsumeGivesOneTracePerMessageWithTheCanonicalChain) {
  auto receiver = OtlpReceiver::Start();
  ASSERT_TRUE(receiver.ok()) << receiver.status();
  const std::map<std::string, std::string> otel = {
      {"OTEL_EXPORTER_OTLP_ENDPOINT", (*receiver)->base_url()}, {"OTEL_BSP_SCHEDULE_DELAY", "100"}};

  TempDir dir;
  auto server_env = otel;
  server_env["OTEL_SERVICE_NAME"] = "kingfisher-e2e";
  ServerProcess server({.data_dir = dir.path() + "/data", .env = server_env});
  ASSERT_TRUE(server.Start()) << server.Output();

  auto kfctl_env = otel;
  kfctl_env["OTEL_SERVICE_NAME"] = "kfctl-e2e";
  auto produced = RunKfctl(dir.path(),
                           {"--endpoint", server.address(), "--timeout", "20", "produce",
                            "--vchannel", kVChannel, "--count", std::to_string(kMessages)},
                           kfctl_env);
  ASSERT_EQ(produced.exit_code, 0) << Describe(produced);
  ASSERT_EQ(produced.lines.size(), static_cast<size_t>(kMessages)) << Describe(produced);
  // Served from the buffer: the first produced message is where the buffer's run starts.
  auto first_id = FirstMessageId(produced);
  ASSERT_TRUE(first_id.has_value()) << Describe(produced);
  auto tailed = Consume(dir.path(), server.address(), {"--from", *first_id}, kfctl_env);
  ASSERT_EQ(tailed.exit_code, 0) << Describe(tailed);
  ASSERT_EQ(tailed.lines.size(), static_cast<size_t>(kMessages)) << Describe(tailed);
  // SIGTERM: the server flushes its batch span processor before exiting. The restarted
  // server's buffer is empty, so the second read catches up from the log.
  auto stopped = server.Stop();
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << stopped.output;
  ASSERT_TRUE(server.Start()) << server.Output();
  auto caught_up = Consume(dir.path(), server.address(), {"--from", "earliest"}, kfctl_env);
  ASSERT_EQ(caught_up.exit_code, 0) << Describe(caught_up);
  ASSERT_EQ(caught_up.lines.size(), static_cast<size_t>(kMessages)) << Describe(caught_up);
  stopped = server.Stop();
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << stopped.output;

  auto spans = (*receiver)->Spans();
  ASSERT_TRUE(spans.ok()) << spans.status();
  std::map<std::string, std::vector<const DecodedSpan*>> by_trace;
  for (const DecodedSpan& s : *spans) {
    EXPECT_TRUE(kVocabulary.count(s.name)) << "span outside the vocabulary: " << s.name;
    EXPECT_EQ(s.scope, "kingfisher.streaming.wal") << s.name;
    auto type = s.attributes.find("message.type");
    if (type != s.attributes.end()) {
      EXPECT_NE(std::get<std::string>(type->second), "TimeTick") << "TimeTick traced: " << s.name;
    }
    by_trace[s.trace_id].push_back(&s);
  }

  int complete_traces = 0;
  for (const auto& [trace_id, members] : by_trace) {
    SCOPED_TRACE("trace " + trace_id);
    std::map<std::string, std::vector<const DecodedSpan*>> by_name;
    for (const DecodedSpan* s : members) by_name[s->name].push_back(s);
    auto get = [&](const std::string& name) -> const DecodedSpan* {
      auto it = by_name.find(name);
      return it == by_name.end() || it->second.size() != 1 ? nullptr : it->second.front();
    };
    const DecodedSpan* autocommit = get("wal.autocommit");
    const DecodedSpan* dist_append = get("wal.dist_append");
    const DecodedSpan* append = get("wal.append");
    const DecodedSpan* appendimpl = get("wal.appendimpl");
    const DecodedSpan* catchup = get("wal.catchup_consume");
    ASSERT_TRUE(autocommit && dist_append && append && appendimpl && catchup)
        << "incomplete trace of " << members.size() << " spans";
    ASSERT_EQ(by_name["wal.dist_consume"].size(), 2u) << "one per read";
    EXPECT_EQ(members.size(), 7u);
    // The tailing read's marker hangs directly under appendimpl, the catch-up read's under
    // the server's catch-up marker.
    const DecodedSpan* tailing_consume = nullptr;
    const DecodedSpan* dist_consume = nullptr;
    for (const DecodedSpan* d : by_name["wal.dist_consume"]) {
      (d->parent_span_id == appendimpl->span_id ? tailing_consume : dist_consume) = d;
    }
    ASSERT_TRUE(tailing_consume != nullptr) << "no wal.dist_consume under wal.appendimpl";
    ASSERT_TRUE(dist_consume != nullptr) << "no wal.dist_consume under wal.catchup_consume";
    EXPECT_EQ(autocommit->parent_span_id, "") << "wal.autocommit is the root";
    EXPECT_EQ(dist_append->parent_span_id, autocommit->span_id);
    EXPECT_EQ(append->parent_span_id, dist_append->span_id);
    EXPECT_EQ(appendimpl->parent_span_id, append->span_id);
    EXPECT_EQ(catchup->parent_span_id, appendimpl->span_id);
    EXPECT_EQ(dist_consume->parent_span_id, catchup->span_id);
    EXPECT_EQ(tailing_consume->service_name, "kfctl-e2e");
    EXPECT_EQ(tailing_consume->kind, kConsumer);
    // Which process made which span: the producer and consumer sides are kfctl.
    EXPECT_EQ(autocommit->service_name, "kfctl-e2e");
    EXPECT_EQ(dist_append->service_name, "kfctl-e2e");
    EXPECT_EQ(dist_consume->service_name, "kfctl-e2e");
    EXPECT_EQ(append->service_name, "kingfisher-e2e");
    EXPECT_EQ(appendimpl->service_name, "kingfisher-e2e");
    EXPECT_EQ(catchup->service_name, "kingfisher-e2e");
    EXPECT_EQ(autocommit->kind, kProducer);
    EXPECT_EQ(dist_append->kind, kProducer);
    EXPECT_EQ(append->kind, kInternal);
    EXPECT_EQ(appendimpl->kind, kInternal);
    EXPECT_EQ(catchup->kind, kConsumer);
    EXPECT_EQ(dist_consume->kind, kConsumer);
    for (const DecodedSpan* s : members) {
      auto vc = s->attributes.find("message.vchannel");
      ASSERT_NE(vc, s->attributes.end()) << s->name;
      EXPECT_EQ(std::get<std::string>(vc->second), kVChannel) << s->name;
      auto type = s->attributes.find("message.type");
      ASSERT_NE(type, s->attributes.end()) << s->name;
      EXPECT_EQ(std::get<std::string>(type->second), "Insert") << s->name;
    }
    ++complete_traces;
  }
  EXPECT_EQ(complete_traces, kMessages);
}

}  // namespace
}  // namespace kf::testing
