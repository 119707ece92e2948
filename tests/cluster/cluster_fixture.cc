#include "cluster_fixture.h"

#include <chrono>
#include <set>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/text_codec.h"
#include "message/properties.h"

namespace kf::cluster_testing {

using testing::ServerProcess;

std::string PChannel(int i) { return absl::StrCat(kCluster, "-dml_", i); }
std::string VChannel(int i) { return PChannel(i) + "_load"; }

std::optional<int64_t> ServedTerm(const std::string& metrics, int p) {
  std::istringstream lines(metrics);
  const std::string prefix = absl::StrCat("kf_pchannel_term{pchannel=\"", PChannel(p), "\"}");
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    double v = 0;
    if (absl::SimpleAtod(line.substr(prefix.size()), &v)) return static_cast<int64_t>(v);
  }
  return std::nullopt;
}

int64_t TermOf(const kingfisher::ConsumedMessage& m) {
  auto it = m.properties.find(std::string(prop::kWalTerm));
  if (it == m.properties.end()) return 0;
  std::optional<uint64_t> t = Base36Decode(it->second);
  return t ? static_cast<int64_t>(*t) : 0;
}

// ---- Load ----

Load::Load(kingfisher::Client* client, std::vector<int> pchannels, int in_flight)
    : client_(client), in_flight_(in_flight) {
  for (int p : pchannels) {
    absl::MutexLock l(&mu_);
    ops_[p];
    acked_[p] = 0;
    outstanding_[p] = 0;
  }
  for (int p : pchannels) threads_.emplace_back([this, p] { Run(p); });
}

Load::~Load() { Stop(); }

void Load::Stop() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void Load::Run(int p) {
  auto producer = client_->CreateProducer();
  ASSERT_TRUE(producer.ok()) << producer.status();
  for (int i = 0;; ++i) {
    size_t index;
    kingfisher::Message m{.type = kingfisher::MessageType::kInsert,
                          .vchannel = VChannel(p),
                          .payload = absl::StrCat("p", p, "-m", i)};
    {
      absl::MutexLock l(&mu_);
      auto room = [this, p]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || outstanding_[p] < in_flight_;
      };
      mu_.Await(absl::Condition(&room));
      if (stop_) break;
      index = ops_[p].size();
      ops_[p].push_back(Op{.payload = m.payload});
      ++outstanding_[p];
    }
    (*producer)->AppendAsync(std::move(m),
                             [this, p, index](absl::StatusOr<kingfisher::AppendResult> r) {
                               absl::MutexLock l(&mu_);
                               Op& op = ops_[p][index];
                               op.done = absl::Now();
                               if (r.ok()) ++acked_[p];
                               op.result = std::move(r);
                               --outstanding_[p];
                             });
  }
  // Let the appends in flight finish on their own (each has its deadline): Close would cancel
  // those that still need a retry, and a stop must not make appends fail.
  absl::MutexLock l(&mu_);
  auto drained = [this, p]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return outstanding_[p] == 0; };
  mu_.Await(absl::Condition(&drained));
}

bool Load::WaitAcked(int p, int64_t n, absl::Duration timeout) const {
  absl::MutexLock l(&mu_);
  auto reached = [this, p, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int64_t total = 0;
    for (const auto& [q, k] : acked_) total += (p < 0 || q == p) ? k : 0;
    return total >= n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
}

size_t Load::issued(int p) const {
  absl::MutexLock l(&mu_);
  return ops_.at(p).size();
}

bool Load::WaitAckedFrom(int p, size_t first, int64_t n, absl::Duration timeout) const {
  absl::MutexLock l(&mu_);
  auto reached = [this, p, first, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const std::vector<Op>& ops = ops_.at(p);
    int64_t k = 0;
    for (size_t i = first; i < ops.size(); ++i) k += ops[i].result.ok() ? 1 : 0;
    return k >= n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
}

std::vector<Load::Op> Load::Ops(int p) const {
  absl::MutexLock l(&mu_);
  return ops_.at(p);
}

std::vector<std::string> Load::InFlight(int p) const {
  absl::MutexLock l(&mu_);
  std::vector<std::string> out;
  for (const Op& op : ops_.at(p)) {
    if (op.done == absl::InfiniteFuture()) out.push_back(op.payload);
  }
  return out;
}

// ---- ClusterTest ----

void ClusterTest::SetUp() {
  if (auto tls = EtcdTls()) etcd_.set_tls(*std::move(tls));
  const absl::Status etcd = etcd_.Start();
  ASSERT_TRUE(etcd.ok()) << etcd;
  std::vector<std::string> common = {
      "--etcd", etcd_.endpoint(), "--cluster", kCluster, "--pchannels", "3", "--lease-ttl", "2"};
  const std::vector<std::string> tls = ServerTlsArgs();
  common.insert(common.end(), tls.begin(), tls.end());
  std::vector<std::string> coord_args = common;
  coord_args.insert(coord_args.end(), {"--balance-interval", "1"});
  coord_ = std::make_unique<ServerProcess>(ServerProcess::Options{
      .data_dir = dir_.path() + "/coord", .extra_args = coord_args, .role = "coord"});
  ASSERT_TRUE(coord_->Start()) << coord_->Output();
  if (WalBackend() == "quorum") {
    for (int i = 1; i <= 3; ++i) {
      std::vector<std::string> args = {"--etcd", etcd_.endpoint(), "--cluster", kCluster};
      args.insert(args.end(), tls.begin(), tls.end());
      logstores_.push_back(std::make_unique<ServerProcess>(
          ServerProcess::Options{.data_dir = absl::StrCat(dir_.path(), "/logstore", i),
                                 .extra_args = std::move(args),
                                 .role = "logstore"}));
      ASSERT_TRUE(logstores_.back()->Start()) << logstores_.back()->Output();
    }
  }
  for (int id = 1; id <= kNodes; ++id) {
    std::vector<std::string> args = common;
    args.insert(args.end(), {"--node-id", std::to_string(id), "--drain-timeout", "10"});
    if (WalBackend() == "objectstore") {
      args.insert(args.end(), {"--wal-backend", WalBackend(), "--object-store",
                               "file://" + dir_.path() + "/objects"});
    } else if (WalBackend() == "quorum") {
      args.insert(args.end(), {"--wal-backend", WalBackend()});
    }
    for (const std::string& a : NodeArgs()) args.push_back(a);
    nodes_[id] = std::make_unique<ServerProcess>(
        ServerProcess::Options{.data_dir = dir_.path() + "/data",
                               .extra_args = args,
                               .role = "node",
                               .log_path = absl::StrCat(dir_.path(), "/node", id, ".log")});
    ASSERT_TRUE(nodes_[id]->Start()) << nodes_[id]->Output();
  }
  client_ = Connect();
  ASSERT_NE(client_, nullptr);
  ASSERT_TRUE(WaitSettled(absl::Seconds(30))) << coord_->Output();
}

std::unique_ptr<kingfisher::Client> ClusterTest::Connect(kingfisher::Duration attempt_timeout,
                                                         kingfisher::Duration append_timeout) {
  kingfisher::ClientOptions options;
  options.endpoint = coord_->address();
  options.attempt_timeout = attempt_timeout;
  options.append_timeout = append_timeout;
  options.tls = ClientTls();
  auto client = kingfisher::Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

bool ClusterTest::WaitStatus(const std::function<bool(const kingfisher::ClusterStatus&)>& pred,
                             absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    auto status = client_->GetStatus();
    if (status.ok() && pred(*status)) return true;
    absl::SleepFor(absl::Milliseconds(50));  // polling a remote state, bounded by the deadline
  }
  return false;
}

bool ClusterTest::WaitAllAssigned(absl::Duration timeout) {
  return WaitStatus(
      [](const kingfisher::ClusterStatus& s) {
        int assigned = 0;
        for (const auto& p : s.pchannels) assigned += p.state == "ASSIGNED" ? 1 : 0;
        return assigned == kPChannels;
      },
      timeout);
}

bool ClusterTest::WaitSettled(absl::Duration timeout) {
  return WaitStatus(
      [](const kingfisher::ClusterStatus& s) {
        std::map<int64_t, int> load;
        for (const auto& p : s.pchannels) {
          if (p.state != "ASSIGNED") return false;
          ++load[p.node];
        }
        if (load.size() != static_cast<size_t>(kNodes)) return false;
        for (const auto& [node, n] : load) {
          if (n != 1) return false;
        }
        return true;
      },
      timeout);
}

std::map<std::string, std::pair<int64_t, int64_t>> ClusterTest::Owners() {
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  auto status = client_->GetStatus();
  EXPECT_TRUE(status.ok()) << status.status();
  if (status.ok()) {
    for (const auto& p : status->pchannels) out[p.pchannel] = {p.node, p.term};
  }
  return out;
}

bool ClusterTest::WaitStopsServing(int node, int p, int64_t term, absl::Duration timeout,
                                   std::string* metrics) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    *metrics = testing::HttpGet(nodes_.at(node)->http_port(), "/metrics");
    if (metrics->find("200 OK") != std::string::npos && ServedTerm(*metrics, p) != term) {
      return true;
    }
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(50));  // polling a remote state, bounded by the deadline
  }
}

std::vector<kingfisher::ConsumedMessage> ClusterTest::ReadAll(const std::string& vchannel,
                                                              size_t want) {
  kingfisher::ConsumerOptions co;
  co.vchannel = vchannel;
  co.policy = kingfisher::DeliverPolicy::All();
  auto consumer = client_->CreateConsumer(co);
  EXPECT_TRUE(consumer.ok()) << consumer.status();
  std::vector<kingfisher::ConsumedMessage> out;
  if (!consumer.ok()) return out;
  const kingfisher::Deadline deadline = kingfisher::Clock::now() + std::chrono::seconds(60);
  while (out.size() < want && kingfisher::Clock::now() < deadline) {
    auto m = (*consumer)->Next(deadline);
    if (!m.ok()) break;
    if (m->type != kingfisher::MessageType::kTimeTick) out.push_back(*std::move(m));
  }
  return out;
}

std::vector<kingfisher::ConsumedMessage> ClusterTest::ReadPChannelToEnd(int p) {
  std::vector<kingfisher::ConsumedMessage> out;
  const std::string last = absl::StrCat("end-of-p", p);
  {
    auto producer = client_->CreateProducer();
    EXPECT_TRUE(producer.ok()) << producer.status();
    if (!producer.ok()) return out;
    kingfisher::Message m{
        .type = kingfisher::MessageType::kInsert, .vchannel = VChannel(p), .payload = last};
    auto r = (*producer)->AppendSync(std::move(m));
    EXPECT_TRUE(r.ok()) << "the last append to pchannel " << p << ": " << r.status();
    if (!r.ok()) return out;
  }
  kingfisher::ConsumerOptions co;
  co.vchannel = PChannel(p);  // the whole pchannel
  co.policy = kingfisher::DeliverPolicy::All();
  auto consumer = client_->CreateConsumer(co);
  EXPECT_TRUE(consumer.ok()) << consumer.status();
  if (!consumer.ok()) return out;
  const kingfisher::Deadline deadline = kingfisher::Clock::now() + std::chrono::seconds(60);
  for (;;) {
    auto m = (*consumer)->Next(deadline);
    if (!m.ok()) {
      ADD_FAILURE() << "reading pchannel " << p << " after " << out.size()
                    << " messages: " << m.status();
      return out;
    }
    const bool end = m->type != kingfisher::MessageType::kTimeTick && m->payload == last;
    out.push_back(*std::move(m));
    if (end) return out;
  }
}

// ---- checks ----

namespace {

// A bounded list of violations for one EXPECT (a broken run would otherwise print thousands).
class Problems {
 public:
  void Add(std::string p) {
    if (list_.size() < 10) list_.push_back(std::move(p));
    ++count_;
  }
  void Expect(const std::string& what) const {
    EXPECT_EQ(count_, 0) << what << ": " << absl::StrJoin(list_, "; ")
                         << (count_ > list_.size() ? "; ..." : "");
  }

 private:
  std::vector<std::string> list_;
  size_t count_ = 0;
};

}  // namespace

void ExpectExactlyOnce(const std::vector<kingfisher::ConsumedMessage>& log,
                       const std::vector<Load::Op>& ops, const std::string& what) {
  std::map<std::string, int> payloads;
  std::set<std::string> iks;
  Problems problems;
  for (const auto& m : log) {
    if (m.type == kingfisher::MessageType::kTimeTick) continue;
    ++payloads[m.payload];
    auto ik = m.properties.find(std::string(prop::kIdempotencyKey));
    if (ik == m.properties.end()) {
      problems.Add("no _ik on " + m.payload);
    } else if (!iks.insert(ik->second).second) {
      problems.Add("_ik twice: " + ik->second);
    }
  }
  for (const auto& [payload, n] : payloads) {
    if (n > 1) problems.Add(absl::StrCat(payload, " ", n, " times"));
  }
  for (const Load::Op& op : ops) {
    const int n = payloads.contains(op.payload) ? payloads[op.payload] : 0;
    if (op.result.ok() && n != 1) {
      problems.Add(absl::StrCat("acknowledged ", op.payload, " is there ", n, " times"));
    }
  }
  problems.Expect(what + ": exactly once");
}

void ExpectOrdered(const std::vector<kingfisher::ConsumedMessage>& log, const std::string& what) {
  Problems problems;
  for (size_t i = 1; i < log.size(); ++i) {
    const auto& a = log[i - 1];
    const auto& b = log[i];
    if (!(a.timetick < b.timetick)) {
      problems.Add(absl::StrCat("timetick ", b.timetick.value(), " (", b.payload, ") after ",
                                a.timetick.value(), " (", a.payload, ")"));
    }
    if (TermOf(b) < TermOf(a)) {
      problems.Add(absl::StrCat("term ", TermOf(b), " (", b.payload, ") after term ", TermOf(a),
                                " (", a.payload, ")"));
    }
  }
  problems.Expect(what + ": order");
}

}  // namespace kf::cluster_testing
