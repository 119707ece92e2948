// Tracing end to end (docs/tracing.md §8 scenario 18 for the autocommit, transaction, broadcast
// and replication shapes): real processes, the real OTLP/HTTP exporter, and a decoder we did not
// write (protobufjs with the upstream OTLP protos, tests/otlp). The autocommit shape: `kfctl
// produce`, then `kfctl consume` twice: once from the write-ahead buffer (tailing: no server-side
// consume span) and, after a server restart empties the buffer, once from the log (catch-up). Per
// message there must be ONE trace:
//   wal.autocommit > wal.dist_append > wal.append > wal.appendimpl > wal.dist_consume  (tailing)
//                                                  wal.appendimpl > wal.catchup_consume >
//                                                                   wal.dist_consume  (catch-up)
// and TimeTick messages must produce no spans.
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kfctl_runner.h"
#include "kingfisher/client.h"
#include "kingfisher/consumer.h"
#include "kingfisher/producer.h"
#include "kingfisher/v1/collections.grpc.pb.h"
#include "otlp/otlp_receiver.h"
#include "server_process.h"
#include "trace/batch_span_processor.h"
#include "trace/env.h"
#include "trace/otlp_http_exporter.h"
#include "trace/public_context.h"
#include "trace/sdk_tracer_provider.h"
#include "trace/tracer.h"

namespace kf::testing {
namespace {

constexpr char kPChannel[] = "kf-dml_2";
constexpr char kVChannel[] = "kf-dml_2_traced";
constexpr int kMessages = 3;

const std::set<std::string> kVocabulary = {
    "wal.autocommit",      "wal.txn",         "wal.broadcast",       "wal.append",
    "wal.appendimpl",      "wal.dist_append", "wal.catchup_consume", "wal.dist_consume",
    "replicate.secondary", "wal.bc_callback"};

constexpr int kInternal = 1, kProducer = 4, kConsumer = 5;

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
  // A consumer tailing before anything is produced: served from the write-ahead buffer (it
  // retains messages only while a reader exists, so the reader must be there first).
  const std::string tail_dir = dir.path() + "/tail";
  std::filesystem::create_directories(tail_dir);
  KfctlResult tailed;
  std::thread tailer([&] {
    tailed = Consume(tail_dir, server.address(), {"--from", "latest"}, kfctl_env);
  });
  const bool tailing = server.WaitForReaders(kPChannel, 1);
  auto produced = RunKfctl(dir.path(),
                           {"--endpoint", server.address(), "--timeout", "20", "produce",
                            "--vchannel", kVChannel, "--count", std::to_string(kMessages)},
                           kfctl_env);
  tailer.join();  // the consumer exits after --limit messages or its idle timeout
  ASSERT_EQ(produced.exit_code, 0) << Describe(produced);
  ASSERT_TRUE(tailing) << "the consumer never opened a reader";
  ASSERT_EQ(produced.lines.size(), static_cast<size_t>(kMessages)) << Describe(produced);
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

// docs/tracing.md §6 "broadcast" over real processes (scenario 18): a CreateCollection with a
// caller traceparent, on 2 shards, gives ONE trace under the caller's span:
//   wal.broadcast > wal.dist_append > wal.append > wal.appendimpl   (per vchannel)
//   wal.broadcast > wal.bc_callback
// and no wal.autocommit or wal.txn. The coordinator appends through its own Produce service,
// so each copy crosses the network (wal.dist_append) even in standalone.
TEST(TracingE2E, CreateCollectionGivesOneTraceWithTheBroadcastShape) {
  auto receiver = OtlpReceiver::Start();
  ASSERT_TRUE(receiver.ok()) << receiver.status();
  TempDir dir;
  ServerProcess server({.data_dir = dir.path() + "/data",
                        .env = {{"OTEL_EXPORTER_OTLP_ENDPOINT", (*receiver)->base_url()},
                                {"OTEL_BSP_SCHEDULE_DELAY", "100"},
                                {"OTEL_SERVICE_NAME", "kingfisher-e2e"}}});
  ASSERT_TRUE(server.Start()) << server.Output();

  constexpr char kTraceId[] = "0102030405060708090a0b0c0d0e0f10";
  constexpr char kCallerSpan[] = "1112131415161718";
  kingfisher::v1::CreateCollectionRequest req;
  req.set_name("traced");
  req.set_dim(4);
  req.set_metric(kingfisher::v1::L2);
  req.set_shards(2);
  req.mutable_options()->set_traceparent(std::string("00-") + kTraceId + "-" + kCallerSpan + "-01");
  auto stub = kingfisher::v1::Collections::NewStub(
      grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  kingfisher::v1::CreateCollectionResponse resp;
  grpc::Status created = stub->CreateCollection(&ctx, req, &resp);
  ASSERT_TRUE(created.ok()) << created.error_message();
  const auto& vchannels = resp.collection().schema().vchannels();
  ASSERT_EQ(vchannels.size(), 2);
  auto stopped = server.Stop();  // flushes the batch span processor
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << stopped.output;

  auto spans = (*receiver)->Spans();
  ASSERT_TRUE(spans.ok()) << spans.status();
  std::map<std::string, std::vector<const DecodedSpan*>> by_name;
  for (const DecodedSpan& s : *spans) {
    EXPECT_TRUE(kVocabulary.count(s.name)) << "span outside the vocabulary: " << s.name;
    EXPECT_NE(s.name, "wal.autocommit");
    EXPECT_NE(s.name, "wal.txn");
    auto type = s.attributes.find("message.type");
    const bool ddl =
        s.name == "wal.bc_callback" ||
        (type != s.attributes.end() && std::get<std::string>(type->second) == "CreateCollection");
    if (!ddl) continue;
    EXPECT_EQ(s.trace_id, kTraceId) << s.name << ": not in the caller's trace";
    EXPECT_EQ(s.service_name, "kingfisher-e2e") << s.name;
    by_name[s.name].push_back(&s);
  }
  ASSERT_EQ(by_name["wal.broadcast"].size(), 1u);
  const DecodedSpan* broadcast = by_name["wal.broadcast"][0];
  EXPECT_EQ(broadcast->parent_span_id, kCallerSpan);
  EXPECT_EQ(broadcast->kind, kProducer);
  EXPECT_EQ(std::get<std::vector<std::string>>(broadcast->attributes.at("broadcast.vchannels")),
            std::vector<std::string>(vchannels.begin(), vchannels.end()));
  EXPECT_GT(std::get<int64_t>(broadcast->attributes.at("broadcast.id")), 0);

  ASSERT_EQ(by_name["wal.bc_callback"].size(), 1u);
  EXPECT_EQ(by_name["wal.bc_callback"][0]->parent_span_id, broadcast->span_id);
  ASSERT_EQ(by_name["wal.dist_append"].size(), 2u);
  ASSERT_EQ(by_name["wal.append"].size(), 2u);
  ASSERT_EQ(by_name["wal.appendimpl"].size(), 2u);
  std::set<std::string> appended_to;
  for (const DecodedSpan* dist : by_name["wal.dist_append"]) {
    EXPECT_EQ(dist->parent_span_id, broadcast->span_id);
    EXPECT_EQ(dist->kind, kProducer);
    const DecodedSpan* append = nullptr;
    for (const DecodedSpan* a : by_name["wal.append"]) {
      if (a->parent_span_id == dist->span_id) append = a;
    }
    ASSERT_NE(append, nullptr) << "no wal.append under a wal.dist_append";
    const DecodedSpan* impl = nullptr;
    for (const DecodedSpan* i : by_name["wal.appendimpl"]) {
      if (i->parent_span_id == append->span_id) impl = i;
    }
    ASSERT_NE(impl, nullptr) << "no wal.appendimpl under a wal.append";
    appended_to.insert(std::get<std::string>(append->attributes.at("message.vchannel")));
  }
  EXPECT_EQ(appended_to, std::set<std::string>(vchannels.begin(), vchannels.end()));
  EXPECT_EQ(by_name.size(), 5u);  // nothing else in the trace
}

// docs/tracing.md §6 "transaction" over real processes (scenario 18): Begin, 2 bodies and Commit
// through the client library (this process, exporting to the same receiver) under a caller's
// context, read by a consumer that was tailing before the Begin, give ONE trace, the caller's:
//   request > wal.txn > wal.dist_append > wal.append > wal.appendimpl   (Begin, each body, Commit)
//   the Commit's wal.appendimpl > wal.dist_consume                      (the assembled Txn, once)
// and no wal.autocommit: the transaction stays flat. The request is the caller's remote parent,
// not exported.
TEST(TracingE2E, TxnGivesOneTraceWithTheTransactionShape) {
  constexpr char kTxnPChannel[] = "kf-dml_1";
  constexpr char kTxnVChannel[] = "kf-dml_1_traced_txn";
  constexpr char kTraceId[] = "4bf92f3577b34da6a3ce929d0e0e4736";
  constexpr char kCallerSpan[] = "00f067aa0ba902b7";
  auto receiver = OtlpReceiver::Start();
  ASSERT_TRUE(receiver.ok()) << receiver.status();
  TempDir dir;
  ServerProcess server({.data_dir = dir.path() + "/data",
                        .env = {{"OTEL_EXPORTER_OTLP_ENDPOINT", (*receiver)->base_url()},
                                {"OTEL_BSP_SCHEDULE_DELAY", "100"},
                                {"OTEL_SERVICE_NAME", "kingfisher-e2e"}}});
  ASSERT_TRUE(server.Start()) << server.Output();

  // The client side's spans (wal.txn, wal.dist_append, wal.dist_consume) are made here.
  trace::OtlpHttpExporterOptions exporter;
  exporter.endpoint = (*receiver)->traces_endpoint();
  auto provider = std::make_shared<trace::SdkTracerProvider>(
      trace::Attributes{{"service.name", std::string("kf-client-e2e")}}, /*sampler=*/nullptr,
      std::make_unique<trace::BatchSpanProcessor>(
          std::make_shared<trace::OtlpHttpExporter>(exporter), trace::BatchSpanProcessorOptions{}));
  trace::SetTracerProvider(provider);
  trace::TracingHandle installed(provider);  // restores the no-op provider however the test ends

  auto client = kingfisher::Client::Connect({.endpoint = server.address()});
  ASSERT_TRUE(client.ok()) << client.status();
  auto consumer = (*client)->CreateConsumer({.vchannel = kTxnVChannel});  // from the latest
  ASSERT_TRUE(consumer.ok()) << consumer.status();
  absl::StatusOr<kingfisher::ConsumedMessage> consumed;
  std::thread reader([&] {
    const kingfisher::Deadline until = kingfisher::Clock::now() + std::chrono::seconds(30);
    do {
      consumed = (*consumer)->Next(until);
    } while (consumed.ok() && consumed->type == kingfisher::MessageType::kTimeTick);
  });
  struct StopReader {  // an early return must not leave the reader blocked or joinable
    kingfisher::Consumer* consumer;
    std::thread* reader;
    ~StopReader() {
      consumer->Close();  // wakes a blocked Next
      if (reader->joinable()) reader->join();
    }
  } stop_reader{consumer->get(), &reader};
  // Tailing before the Begin: the Txn is served from the write-ahead buffer (§5).
  ASSERT_TRUE(server.WaitForReaders(kTxnPChannel, 1)) << "the consumer never opened a reader";

  auto producer = (*client)->CreateProducer();
  ASSERT_TRUE(producer.ok()) << producer.status();
  kingfisher::TxnOptions options;
  options.trace = *kingfisher::TraceContext::FromTraceparent(std::string("00-") + kTraceId + "-" +
                                                             kCallerSpan + "-01");
  auto txn = (*producer)->BeginTxn(kTxnVChannel, options);
  ASSERT_TRUE(txn.ok()) << txn.status();
  std::set<int64_t> body_timeticks;
  for (const char* payload : {"b1", "b2"}) {
    auto body = (*txn)->AppendSync(kingfisher::Message{
        .type = kingfisher::MessageType::kInsert, .vchannel = kTxnVChannel, .payload = payload});
    ASSERT_TRUE(body.ok()) << body.status();
    body_timeticks.insert(static_cast<int64_t>(body->timetick.value()));
  }
  auto commit = (*txn)->Commit();
  ASSERT_TRUE(commit.ok()) << commit.status();
  reader.join();  // the reader stops at the first message that is not a TimeTick
  ASSERT_TRUE(consumed.ok()) << consumed.status();
  ASSERT_EQ(consumed->type, kingfisher::MessageType::kTxn);
  EXPECT_EQ(consumed->id, commit->id);
  ASSERT_EQ(consumed->messages.size(), 4u);
  (*producer)->Close();
  ASSERT_TRUE(provider->ForceFlush(absl::Seconds(30))) << "the client's spans were not exported";
  auto stopped = server.Stop();  // flushes the server's batch span processor
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << stopped.output;

  auto spans = (*receiver)->Spans();
  ASSERT_TRUE(spans.ok()) << spans.status();
  std::map<std::string, std::vector<const DecodedSpan*>> by_name;
  for (const DecodedSpan& s : *spans) {
    EXPECT_TRUE(kVocabulary.count(s.name)) << "span outside the vocabulary: " << s.name;
    EXPECT_EQ(s.scope, "kingfisher.streaming.wal") << s.name;
    EXPECT_EQ(s.trace_id, kTraceId) << s.name << ": not in the caller's trace";
    by_name[s.name].push_back(&s);
  }
  EXPECT_EQ(by_name.size(), 5u) << "only wal.txn, wal.dist_append, wal.append, wal.appendimpl "
                                   "and wal.dist_consume";
  EXPECT_EQ(spans->size(), 14u);

  ASSERT_EQ(by_name["wal.txn"].size(), 1u);
  const DecodedSpan* txn_span = by_name["wal.txn"][0];
  EXPECT_EQ(txn_span->parent_span_id, kCallerSpan) << "wal.txn hangs under the request";
  EXPECT_EQ(txn_span->flags & 0x300u, 0x300u) << "its parent is remote";
  EXPECT_EQ(txn_span->kind, kProducer);
  EXPECT_EQ(txn_span->service_name, "kf-client-e2e");
  const int64_t txn_id = static_cast<int64_t>((*txn)->txn_id().value());
  EXPECT_EQ(std::get<int64_t>(txn_span->attributes.at("txn.id")), txn_id);

  // One chain per message: wal.txn > wal.dist_append > wal.append > wal.appendimpl.
  ASSERT_EQ(by_name["wal.dist_append"].size(), 4u);
  ASSERT_EQ(by_name["wal.append"].size(), 4u);
  ASSERT_EQ(by_name["wal.appendimpl"].size(), 4u);
  auto only_child = [&](const std::string& name, const DecodedSpan* parent) -> const DecodedSpan* {
    const DecodedSpan* found = nullptr;
    for (const DecodedSpan* s : by_name[name]) {
      if (s->parent_span_id != parent->span_id) continue;
      if (found != nullptr) return nullptr;
      found = s;
    }
    return found;
  };
  std::multiset<std::string> types;
  std::set<int64_t> appended_body_timeticks;
  const DecodedSpan* commit_impl = nullptr;
  for (const DecodedSpan* dist : by_name["wal.dist_append"]) {
    EXPECT_EQ(dist->parent_span_id, txn_span->span_id);
    EXPECT_EQ(dist->kind, kProducer);
    EXPECT_EQ(dist->service_name, "kf-client-e2e");
    const DecodedSpan* append = only_child("wal.append", dist);
    ASSERT_NE(append, nullptr) << "not one wal.append under a wal.dist_append";
    const DecodedSpan* impl = only_child("wal.appendimpl", append);
    ASSERT_NE(impl, nullptr) << "not one wal.appendimpl under a wal.append";
    for (const DecodedSpan* s : {append, impl}) {
      EXPECT_EQ(s->kind, kInternal) << s->name;
      EXPECT_EQ(s->service_name, "kingfisher-e2e") << s->name;
      EXPECT_EQ(std::get<std::string>(s->attributes.at("message.vchannel")), kTxnVChannel);
    }
    const std::string type = std::get<std::string>(append->attributes.at("message.type"));
    EXPECT_EQ(std::get<std::string>(impl->attributes.at("message.type")), type);
    types.insert(type);
    // Every message carries the transaction's id (the Begin once the WAL has assigned it).
    EXPECT_EQ(std::get<int64_t>(impl->attributes.at("txn.id")), txn_id) << type;
    if (type != "BeginTxn") {
      EXPECT_EQ(std::get<int64_t>(dist->attributes.at("txn.id")), txn_id) << type;
      EXPECT_EQ(std::get<int64_t>(append->attributes.at("txn.id")), txn_id) << type;
    }
    const int64_t timetick = std::get<int64_t>(impl->attributes.at("message.timetick"));
    if (type == "Insert") appended_body_timeticks.insert(timetick);
    if (type == "CommitTxn") {
      EXPECT_EQ(timetick, static_cast<int64_t>(commit->timetick.value()));
      commit_impl = impl;
    }
  }
  EXPECT_EQ(types, (std::multiset<std::string>{"BeginTxn", "Insert", "Insert", "CommitTxn"}));
  EXPECT_EQ(appended_body_timeticks, body_timeticks);
  ASSERT_NE(commit_impl, nullptr);

  // The assembled Txn's single consume marker, under the Commit's wal.appendimpl (tailing: no
  // wal.catchup_consume), and its context is what the consumer handed out.
  ASSERT_EQ(by_name["wal.dist_consume"].size(), 1u) << "one for the Txn, none for its parts";
  const DecodedSpan* dist_consume = by_name["wal.dist_consume"][0];
  EXPECT_EQ(dist_consume->parent_span_id, commit_impl->span_id);
  EXPECT_EQ(dist_consume->kind, kConsumer);
  EXPECT_EQ(dist_consume->service_name, "kf-client-e2e");
  EXPECT_EQ(std::get<std::string>(dist_consume->attributes.at("message.type")), "Txn");
  EXPECT_EQ(std::get<int64_t>(dist_consume->attributes.at("txn.id")), txn_id);
  const trace::SpanContext handed_out = trace::FromPublic(consumed->trace);
  EXPECT_EQ(handed_out.trace_id.ToHex(), dist_consume->trace_id);
  EXPECT_EQ(handed_out.span_id.ToHex(), dist_consume->span_id);
  const std::string txn_tc = consumed->properties.at("_tc");
  for (const kingfisher::ConsumedMessage& inner : consumed->messages) {
    EXPECT_EQ(inner.properties.at("_tc"), txn_tc) << "the inner messages share the Txn's context";
  }
}

// Replication (docs/tracing.md §6, scenario 18's replication levels): one message produced on
// cluster east and replicated to west is ONE trace across both clusters' processes:
//   wal.autocommit > wal.dist_append > wal.append > wal.appendimpl          (kfctl, east)
//     > wal.dist_consume                                                     (east's replicator)
//       > replicate.secondary > wal.autocommit > wal.append > wal.appendimpl (west)
TEST(TracingE2E, ReplicationGivesOneTraceAcrossBothClusters) {
  auto receiver = OtlpReceiver::Start();
  ASSERT_TRUE(receiver.ok()) << receiver.status();
  const std::map<std::string, std::string> otel = {
      {"OTEL_EXPORTER_OTLP_ENDPOINT", (*receiver)->base_url()}, {"OTEL_BSP_SCHEDULE_DELAY", "100"}};
  TempDir dir;
  auto server = [&](const std::string& cluster) {
    auto env = otel;
    env["OTEL_SERVICE_NAME"] = cluster + "-e2e";
    return std::make_unique<ServerProcess>(
        ServerProcess::Options{.data_dir = dir.path() + "/" + cluster,
                               .extra_args = {"--cluster", cluster, "--pchannels", "1"},
                               .env = env});
  };
  std::unique_ptr<ServerProcess> east = server("east"), west = server("west");
  ASSERT_TRUE(east->Start()) << east->Output();
  ASSERT_TRUE(west->Start()) << west->Output();
  auto kfctl_env = otel;
  kfctl_env["OTEL_SERVICE_NAME"] = "kfctl-e2e";
  auto configured = RunKfctl(dir.path(),
                             {"--endpoint", east->address(), "replicate", "configure", "--primary",
                              "east=" + east->address(), "--secondary", "west=" + west->address()},
                             kfctl_env);
  ASSERT_EQ(configured.exit_code, 0) << Describe(configured);
  auto produced = RunKfctl(dir.path(),
                           {"--endpoint", east->address(), "--timeout", "20", "produce",
                            "--vchannel", "east-dml_0_traced", "--count", "1"},
                           kfctl_env);
  ASSERT_EQ(produced.exit_code, 0) << Describe(produced);
  // On west once replicated (the consumer waits for it).
  auto consumed =
      RunKfctl(dir.path(),
               {"--endpoint", west->address(), "--timeout", "20", "consume", "--vchannel",
                "west-dml_0_traced", "--from", "earliest", "--limit", "1", "--idle-timeout", "20"},
               kfctl_env);
  ASSERT_EQ(consumed.exit_code, 0) << Describe(consumed);
  ASSERT_EQ(consumed.lines.size(), 1u) << Describe(consumed);
  // A DDL: its callback runs on west too, once its copy is there (docs/replication.md).
  auto created = RunKfctl(dir.path(),
                          {"--endpoint", east->address(), "--timeout", "20", "collection", "create",
                           "traced", "--dim", "4"},
                          kfctl_env);
  ASSERT_EQ(created.exit_code, 0) << Describe(created);
  bool described = false;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       !described && std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(100))) {
    described =
        RunKfctl(dir.path(), {"--endpoint", west->address(), "collection", "describe", "traced"})
            .exit_code == 0;
  }
  ASSERT_TRUE(described) << "west never knew the collection";
  for (ServerProcess* s : {east.get(), west.get()}) {  // SIGTERM flushes their spans
    auto stopped = s->Stop();
    ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << stopped.output;
  }

  auto spans = (*receiver)->Spans();
  ASSERT_TRUE(spans.ok()) << spans.status();
  // The DDL's trace is the one of east's wal.broadcast; the produced message's, another.
  const DecodedSpan* broadcast = nullptr;
  for (const DecodedSpan& s : *spans) {  // not the AlterReplicateConfig's
    auto type = s.attributes.find("message.type");
    if (s.name == "wal.broadcast" && s.service_name == "east-e2e" && type != s.attributes.end() &&
        std::get<std::string>(type->second) == "CreateCollection") {
      broadcast = &s;
    }
  }
  ASSERT_NE(broadcast, nullptr) << "no wal.broadcast on east";
  const DecodedSpan* received = nullptr;
  for (const DecodedSpan& s : *spans) {
    if (s.name == "replicate.secondary" && s.trace_id != broadcast->trace_id) {
      ASSERT_EQ(received, nullptr) << "one replicated message, one replicate.secondary";
      received = &s;
    }
  }
  ASSERT_NE(received, nullptr) << "no replicate.secondary span";
  std::map<std::string, const DecodedSpan*> by_id;
  for (const DecodedSpan& s : *spans) {
    if (s.trace_id == received->trace_id) by_id[s.span_id] = &s;
  }
  // Walk up from replicate.secondary to the producer's root, checking each step.
  auto parent = [&](const DecodedSpan* s) -> const DecodedSpan* {
    auto it = by_id.find(s->parent_span_id);
    return it == by_id.end() ? nullptr : it->second;
  };
  const std::vector<std::pair<std::string, std::string>> up = {{"wal.dist_consume", "east-e2e"},
                                                               {"wal.appendimpl", "east-e2e"},
                                                               {"wal.append", "east-e2e"},
                                                               {"wal.dist_append", "kfctl-e2e"},
                                                               {"wal.autocommit", "kfctl-e2e"}};
  EXPECT_EQ(received->service_name, "west-e2e");
  EXPECT_EQ(received->kind, kConsumer);
  const DecodedSpan* at = received;
  for (const auto& [name, service] : up) {
    at = parent(at);
    ASSERT_NE(at, nullptr) << "missing " << name << " above replicate.secondary";
    EXPECT_EQ(at->name, name);
    EXPECT_EQ(at->service_name, service) << name;
  }
  EXPECT_TRUE(at->parent_span_id.empty()) << "wal.autocommit is the root";
  // And down: west's re-append under replicate.secondary.
  auto child = [&](const DecodedSpan* of, const std::string& name) -> const DecodedSpan* {
    const DecodedSpan* found = nullptr;
    for (const auto& [id, s] : by_id) {
      if (s->parent_span_id == of->span_id && s->name == name) {
        EXPECT_EQ(found, nullptr) << "two " << name << " under " << of->name;
        found = s;
      }
    }
    return found;
  };
  const DecodedSpan* autocommit = child(received, "wal.autocommit");
  ASSERT_NE(autocommit, nullptr);
  EXPECT_EQ(autocommit->kind, kProducer);
  const DecodedSpan* append = child(autocommit, "wal.append");
  ASSERT_NE(append, nullptr);
  const DecodedSpan* impl = child(append, "wal.appendimpl");
  ASSERT_NE(impl, nullptr);
  for (const DecodedSpan* s : {autocommit, append, impl}) EXPECT_EQ(s->service_name, "west-e2e");
  auto replicate = impl->attributes.find("message.replicate");
  ASSERT_NE(replicate, impl->attributes.end());
  EXPECT_EQ(std::get<bool>(replicate->second), true);

  // The DDL's trace: east's wal.broadcast and callback, and west's callback under the copy's
  // wal.dist_consume.
  std::map<std::string, int> callbacks;  // service -> count
  std::map<std::string, const DecodedSpan*> ddl;
  for (const DecodedSpan& s : *spans) {
    if (s.trace_id == broadcast->trace_id) ddl[s.span_id] = &s;
  }
  for (const auto& [id, s] : ddl) {
    if (s->name != "wal.bc_callback") continue;
    ++callbacks[s->service_name];
    if (s->service_name != "west-e2e") continue;
    auto up = ddl.find(s->parent_span_id);
    ASSERT_NE(up, ddl.end()) << "west's wal.bc_callback has no parent in the trace";
    EXPECT_EQ(up->second->name, "wal.dist_consume");
    EXPECT_EQ(up->second->service_name, "east-e2e");
  }
  EXPECT_EQ(callbacks["east-e2e"], 1);
  EXPECT_EQ(callbacks["west-e2e"], 1);
}

}  // namespace
}  // namespace kf::testing
