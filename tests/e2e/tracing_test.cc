// Tracing end to end (TRACING.md §8 scenario 18 for the autocommit shape; issue acceptance):
// real processes, the real OTLP/HTTP exporter, and a decoder we did not write (protobufjs with
// the upstream OTLP protos, tests/otlp). `kfctl produce` then `kfctl consume --from earliest`
// must yield, per message, ONE trace whose chain is
//   wal.autocommit > wal.dist_append > wal.append > wal.appendimpl > wal.catchup_consume >
//   wal.dist_consume
// and TimeTick messages must produce no spans.
#include <map>
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
  auto consumed = RunKfctl(
      dir.path(),
      {"--endpoint", server.address(), "--timeout", "20", "consume", "--vchannel", kVChannel,
       "--from", "earliest", "--limit", std::to_string(kMessages), "--idle-timeout", "10"},
      kfctl_env);
  ASSERT_EQ(consumed.exit_code, 0) << Describe(consumed);
  ASSERT_EQ(consumed.lines.size(), static_cast<size_t>(kMessages)) << Describe(consumed);
  // SIGTERM: the server flushes its batch span processor before exiting.
  auto stopped = server.Stop();
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
    std::map<std::string, const DecodedSpan*> by_name;
    for (const DecodedSpan* s : members) {
      EXPECT_TRUE(by_name.emplace(s->name, s).second) << "two " << s->name << " spans";
    }
    auto get = [&](const std::string& name) -> const DecodedSpan* {
      auto it = by_name.find(name);
      return it == by_name.end() ? nullptr : it->second;
    };
    const DecodedSpan* autocommit = get("wal.autocommit");
    const DecodedSpan* dist_append = get("wal.dist_append");
    const DecodedSpan* append = get("wal.append");
    const DecodedSpan* appendimpl = get("wal.appendimpl");
    const DecodedSpan* catchup = get("wal.catchup_consume");
    const DecodedSpan* dist_consume = get("wal.dist_consume");
    ASSERT_TRUE(autocommit && dist_append && append && appendimpl && catchup && dist_consume)
        << "incomplete trace of " << members.size() << " spans";
    EXPECT_EQ(members.size(), 6u);
    EXPECT_EQ(autocommit->parent_span_id, "") << "wal.autocommit is the root";
    EXPECT_EQ(dist_append->parent_span_id, autocommit->span_id);
    EXPECT_EQ(append->parent_span_id, dist_append->span_id);
    EXPECT_EQ(appendimpl->parent_span_id, append->span_id);
    EXPECT_EQ(catchup->parent_span_id, appendimpl->span_id);
    EXPECT_EQ(dist_consume->parent_span_id, catchup->span_id);
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
