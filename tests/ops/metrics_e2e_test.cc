// Operations acceptance test (docs/semantics.md §8): the real `kingfisher run standalone`, driven
// by the client library, scraped over real HTTP. /metrics must account for exactly what the test
// did (appends by code, latency histogram counts, consumed messages, WAL sizes, errors by code) and
// /healthz must say the server is serving.
//
// The exposition is parsed by a small parser of our own that checks what Prometheus requires
// (sample syntax, TYPE before samples, cumulative buckets) and nothing incidental.
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/errors.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kingfisher/client.h"
#include "kingfisher/consumer.h"
#include "kingfisher/producer.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "message/message.h"
#include "server_process.h"

namespace kf {
namespace {

using testing::ServerProcess;
using testing::TempDir;

// ---- a minimal parser of the text exposition format 0.0.4 ----

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Exposition {
  std::vector<Sample> samples;
  std::map<std::string, std::string> types;  // family -> counter|gauge|histogram|...

  // Samples of `name` whose labels include every pair of `match`.
  std::vector<Sample> Find(const std::string& name,
                           const std::map<std::string, std::string>& match = {}) const {
    std::vector<Sample> out;
    for (const Sample& s : samples) {
      if (s.name != name) continue;
      bool ok = true;
      for (const auto& [k, v] : match) {
        auto it = s.labels.find(k);
        ok = ok && it != s.labels.end() && it->second == v;
      }
      if (ok) out.push_back(s);
    }
    return out;
  }
  double Sum(const std::string& name, const std::map<std::string, std::string>& match = {}) const {
    double total = 0;
    for (const Sample& s : Find(name, match)) total += s.value;
    return total;
  }
};

bool NameChar(char c, bool first) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
         (!first && std::isdigit(static_cast<unsigned char>(c)));
}

// The family a sample belongs to: histogram samples carry a suffix.
std::string FamilyOf(const std::string& name, const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      std::string base = name.substr(0, name.size() - s.size());
      if (types.count(base) != 0) return base;
    }
  }
  return name;
}

// Parses `text`; on a malformed line returns the error and the line.
std::optional<std::string> Parse(const std::string& text, Exposition* out) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) return "the exposition must end with a newline";
    const std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty()) continue;
    if (line[0] == '#') {
      // "# TYPE name type" matters; HELP and other comments are free text.
      if (line.rfind("# TYPE ", 0) == 0) {
        const std::string rest = line.substr(7);
        const size_t sp = rest.find(' ');
        if (sp == std::string::npos) return "bad TYPE line: " + line;
        const std::string family = rest.substr(0, sp);
        if (out->types.count(family) != 0) return "second TYPE for " + family;
        out->types[family] = rest.substr(sp + 1);
      }
      continue;
    }
    Sample s;
    size_t i = 0;
    while (i < line.size() && NameChar(line[i], i == 0)) ++i;
    if (i == 0) return "bad metric name: " + line;
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t start = i;
        while (i < line.size() && NameChar(line[i], i == start) && line[i] != ':') ++i;
        if (i == start || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
          return "bad label: " + line;
        }
        const std::string key = line.substr(start, i - start);
        i += 2;
        std::string value;
        for (; i < line.size() && line[i] != '"'; ++i) {
          if (line[i] != '\\') {
            value += line[i];
            continue;
          }
          if (++i >= line.size()) return "bad escape: " + line;
          if (line[i] == 'n') {
            value += '\n';
          } else if (line[i] == '\\' || line[i] == '"') {
            value += line[i];
          } else {
            return "bad escape: " + line;
          }
        }
        if (i >= line.size()) return "unterminated label value: " + line;
        ++i;  // closing quote
        if (!s.labels.emplace(key, value).second) return "repeated label: " + line;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) return "unterminated label set: " + line;
      ++i;  // '}'
    }
    if (i >= line.size() || line[i] != ' ') return "no value: " + line;
    const std::string value = line.substr(i + 1);
    const std::string number = value.substr(0, value.find(' '));  // an optional timestamp follows
    char* end = nullptr;
    s.value = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size()) return "bad value: " + line;
    if (out->types.count(FamilyOf(s.name, out->types)) == 0) {
      return "sample before its TYPE line: " + line;
    }
    out->samples.push_back(std::move(s));
  }
  return std::nullopt;
}

TEST(PrometheusParserTest, ParsesWhatTheFormatAllows) {
  Exposition e;
  ASSERT_EQ(Parse("# HELP x Some help.\n# TYPE x counter\nx{a=\"q\\\"\\\\\\n\",b=\"\"} 3\n"
                  "# TYPE y gauge\ny +Inf 1700000000000\n",
                  &e),
            std::nullopt);
  ASSERT_EQ(e.samples.size(), 2u);
  EXPECT_EQ(e.samples[0].labels.at("a"), "q\"\\\n");
  EXPECT_EQ(e.samples[0].value, 3);
  EXPECT_TRUE(std::isinf(e.samples[1].value));
  Exposition bad;
  EXPECT_NE(Parse("x 1\n", &bad), std::nullopt);  // no TYPE
  EXPECT_NE(Parse("# TYPE x counter\nx{a=b} 1\n", &bad), std::nullopt);
}

// ---- the server ----

constexpr int kMessages = 60;
const char* const kVChannels[] = {"kf-dml_0_ops", "kf-dml_1_ops", "kf-dml_2_ops"};

class MetricsE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ =
        std::make_unique<ServerProcess>(ServerProcess::Options{.data_dir = dir_.path() + "/d"});
    ASSERT_TRUE(server_->Start()) << server_->Output();
    http_ = std::make_unique<httplib::Client>("127.0.0.1", server_->http_port());
    http_->set_read_timeout(10, 0);
  }

  // /healthz turns 200 right after gRPC starts serving, which GetStatus (what Start waits for)
  // may already answer: poll the observable state, bounded.
  httplib::Result WaitForHealthy() {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    for (;;) {
      httplib::Result r = http_->Get("/healthz");
      if ((r && r->status == 200) || absl::Now() > deadline) return r;
    }
  }

  Exposition Scrape() {
    httplib::Result r = http_->Get("/metrics");
    Exposition e;
    if (!r) {
      ADD_FAILURE() << "GET /metrics failed: " << httplib::to_string(r.error());
      return e;
    }
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u)
        << r->get_header_value("Content-Type");
    if (auto err = Parse(r->body, &e)) ADD_FAILURE() << *err << "\n" << r->body;
    return e;
  }

  // One produce request over a raw gRPC stream, so the server (not the client library) judges it.
  kingfisher::v1::ProduceResult RawProduce(const std::string& vchannel) {
    auto stub = kingfisher::v1::StreamingNode::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    auto stream = stub->Produce(&ctx);
    MutableMessage m(MessageType::kInsert, "bad");
    m.set_vchannel(vchannel);
    kingfisher::v1::ProduceRequest req;
    kingfisher::v1::ProduceEntry* e = req.add_entries();
    e->set_id(7);
    m.EncodeTo(e->mutable_message());
    kingfisher::v1::ProduceResponse resp;
    EXPECT_TRUE(stream->Write(req));
    EXPECT_TRUE(stream->Read(&resp));
    EXPECT_EQ(resp.results_size(), 1);
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
    return resp.results_size() > 0 ? resp.results(0) : kingfisher::v1::ProduceResult();
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<httplib::Client> http_;
};

TEST_F(MetricsE2ETest, MetricsAccountForProducedAndConsumedMessages) {
  httplib::Result health = WaitForHealthy();
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok");

  const Exposition before = Scrape();
  EXPECT_EQ(before.Sum("kf_wal_appends_total", {{"code", "OK"}}), 0);
  EXPECT_EQ(before.Sum("kf_build_info"), 1);
  EXPECT_GT(before.Sum("kf_process_start_time_seconds"), 1.6e9);  // a real Unix time

  auto client = kingfisher::Client::Connect({.endpoint = server_->address()});
  ASSERT_TRUE(client.ok()) << client.status();
  auto producer = (*client)->CreateProducer();
  ASSERT_TRUE(producer.ok()) << producer.status();
  std::vector<std::future<absl::StatusOr<kingfisher::AppendResult>>> acks;
  for (int i = 0; i < kMessages; ++i) {
    kingfisher::Message m{.type = MessageType::kInsert,
                          .vchannel = kVChannels[i % 3],
                          .payload = "payload-" + std::to_string(i)};
    acks.push_back((*producer)->Append(std::move(m)));
  }
  for (auto& a : acks) {
    auto r = a.get();
    ASSERT_TRUE(r.ok()) << r.status();
  }
  for (const char* vchannel : kVChannels) {
    auto consumer = (*client)->CreateConsumer(
        {.vchannel = vchannel, .policy = kingfisher::DeliverPolicy::All()});
    ASSERT_TRUE(consumer.ok()) << consumer.status();
    int inserts = 0;
    while (inserts < kMessages / 3) {
      auto m = (*consumer)->Next(kingfisher::Clock::now() + std::chrono::seconds(20));
      ASSERT_TRUE(m.ok()) << m.status() << " after " << inserts << " messages of " << vchannel;
      if (m->type == MessageType::kInsert) ++inserts;
    }
  }

  const Exposition after = Scrape();
  // Appends: exactly ours, acknowledged, over every pchannel (the WAL's own TimeTicks do not
  // count), and the produce requests that carried them.
  EXPECT_EQ(after.Sum("kf_wal_appends_total", {{"code", "OK"}}), kMessages);
  EXPECT_EQ(after.Sum("kf_rpc_produce_total", {{"code", "OK"}}), kMessages);
  EXPECT_GT(after.Sum("kf_wal_append_bytes_total"), kMessages * 9);  // at least the payloads
  EXPECT_EQ(after.types.at("kf_wal_append_latency_seconds"), "histogram");
  EXPECT_EQ(after.Sum("kf_wal_append_latency_seconds_count"), kMessages);
  EXPECT_GT(after.Sum("kf_wal_append_latency_seconds_sum"), 0);
  EXPECT_EQ(after.types.at("kf_wal_flush_duration_seconds"), "histogram");
  EXPECT_GT(after.Sum("kf_wal_flush_duration_seconds_sum"), 0);
  for (int p = 0; p < 4; ++p) {
    const std::string pchannel = "kf-dml_" + std::to_string(p);
    std::vector<Sample> buckets =
        after.Find("kf_wal_append_latency_seconds_bucket", {{"pchannel", pchannel}});
    ASSERT_FALSE(buckets.empty()) << pchannel;
    std::map<double, double> by_le;  // sorted by bound, +Inf last
    for (const Sample& b : buckets)
      by_le[std::strtod(b.labels.at("le").c_str(), nullptr)] = b.value;
    ASSERT_TRUE(std::isinf(by_le.rbegin()->first)) << "no le=\"+Inf\" bucket for " << pchannel;
    double prev = 0;
    for (const auto& [le, n] : by_le) {
      EXPECT_GE(n, prev) << pchannel << " le=" << le << ": buckets must be cumulative";
      prev = n;
    }
    EXPECT_EQ(prev, after.Sum("kf_wal_append_latency_seconds_count", {{"pchannel", pchannel}}));
    // The backend's flushes (its own TimeTicks' groups too): at least one per pchannel written.
    if (prev > 0) {
      EXPECT_GE(after.Sum("kf_wal_flush_duration_seconds_count", {{"pchannel", pchannel}}), 1)
          << pchannel;
    }
    EXPECT_EQ(after.Sum("kf_pchannel_assigned", {{"pchannel", pchannel}, {"node", "1"}}), 1);
    EXPECT_GE(after.Sum("kf_pchannel_term", {{"pchannel", pchannel}}), 1);
    // Followed for search; raw vchannels have no schema, so nothing grows.
    EXPECT_FALSE(after.Find("kf_growing_bytes", {{"pchannel", pchannel}}).empty()) << pchannel;
    EXPECT_EQ(after.Sum("kf_growing_rows", {{"pchannel", pchannel}}), 0) << pchannel;
  }
  // Consumed: at least every Insert (TimeTicks come along), by the server and by the WAL.
  EXPECT_GE(after.Sum("kf_rpc_consume_messages_total"), kMessages);
  EXPECT_GT(after.Sum("kf_rpc_consume_bytes_total"), 0);
  EXPECT_GE(after.Sum("kf_wal_read_messages_total"), kMessages);
  // Sizes on disk of the written pchannels.
  for (int p = 0; p < 3; ++p) {
    EXPECT_GT(after.Sum("kf_wal_size_bytes", {{"pchannel", "kf-dml_" + std::to_string(p)}}), 0)
        << p;
  }
  EXPECT_EQ(after.Sum("kf_errors_total"), 0);

  // A pchannel that does not exist: INVALID_ARGUMENT, counted once as an error and as a
  // produce answer with that code; nothing reaches a WAL.
  kingfisher::v1::ProduceResult bad = RawProduce("kf-dml_9_ops");
  ASSERT_TRUE(bad.has_error()) << bad.DebugString();
  EXPECT_EQ(static_cast<StreamingCode>(bad.error().streaming_code()),
            StreamingCode::kInvalidArgument);
  const Exposition errors = Scrape();
  EXPECT_EQ(errors.Sum("kf_errors_total", {{"code", "INVALID_ARGUMENT"}}), 1);
  EXPECT_EQ(errors.Sum("kf_errors_total"), 1);
  EXPECT_EQ(errors.Sum("kf_rpc_produce_total", {{"code", "INVALID_ARGUMENT"}}), 1);
  EXPECT_EQ(errors.Sum("kf_wal_appends_total"), kMessages);

  EXPECT_EQ(server_->Stop().exit_code, 0) << server_->Output();
}

}  // namespace
}  // namespace kf
