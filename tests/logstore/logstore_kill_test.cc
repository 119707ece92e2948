// The quorum backend against real `kingfisher run logstore` processes killed with SIGKILL:
// 1 of 3 killed, writes go on; 2 of 3 killed, writes fail with UNAVAILABLE and resume (after a
// reopen) once they are back; with 4 logstores a killed one is replaced in later segments'
// ensembles. Every acknowledged entry is read back exactly once.
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "common/errors.h"
#include "gtest/gtest.h"
#include "kingfisher/client.h"
#include "kingfisher/consumer.h"
#include "kingfisher/producer.h"
#include "kingfisher/v1/logstore.pb.h"
#include "server_process.h"
#include "storage/meta/embedded_meta_store.h"
#include "wal/backends/quorum/logstore_client.h"
#include "wal/backends/quorum/quorum_meta.h"
#include "wal/backends/quorum/quorum_opener.h"

namespace kf::wal::quorum {
namespace {

using kf::testing::ServerProcess;
using kf::testing::TempDir;

class LogStoreKillTest : public ::testing::Test {
 protected:
  void StartLogStores(int n) {
    for (int i = 0; i < n; ++i) {
      ServerProcess::Options o;
      o.role = "logstore";
      o.data_dir = dir_.path() + "/ls" + std::to_string(i);
      o.extra_args = {"--object-store", "file://" + dir_.path() + "/objects"};
      stores_.push_back(std::make_unique<ServerProcess>(o));
      ASSERT_TRUE(stores_.back()->Start()) << stores_.back()->Output();
      addresses_.push_back(stores_.back()->address());
    }
    auto meta = meta::EmbeddedMetaStore::Open(dir_.path() + "/meta", {});
    ASSERT_TRUE(meta.ok()) << meta.status();
    meta_ = *std::move(meta);
  }

  QuorumOpenerOptions Options() {
    QuorumOpenerOptions o;
    o.meta = meta_.get();
    o.logstores = addresses_;
    o.rpc_timeout = absl::Seconds(2);
    o.ack_timeout = absl::Seconds(2);
    return o;
  }

  int IndexOf(const std::string& address) {
    for (size_t i = 0; i < addresses_.size(); ++i) {
      if (addresses_[i] == address) return static_cast<int>(i);
    }
    return -1;
  }

  // Appends `n` payloads "p<i>" concurrently; records the acknowledged ones.
  absl::Status Append(WalBackend* b, int first, int n) {
    std::vector<std::promise<absl::Status>> done(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      const std::string payload = "p" + std::to_string(first + i);
      auto id = b->Append(payload, [this, payload, &done, i](absl::Status s) {
        if (s.ok()) {
          absl::MutexLock l(&mu_);
          acked_.insert(payload);
        }
        done[static_cast<size_t>(i)].set_value(s);
      });
      if (!id.ok()) {
        for (int k = i; k < n; ++k) done[static_cast<size_t>(k)].set_value(id.status());
        break;
      }
    }
    absl::Status first_error;
    for (auto& d : done) {
      absl::Status s = d.get_future().get();
      if (!s.ok() && first_error.ok()) first_error = s;
    }
    return first_error;
  }

  // Opens a writer at a fresh term, retrying while logstores reconnect (bounded).
  std::unique_ptr<WalBackend> OpenWriter(WalOpener* opener) {
    for (int attempt = 0; attempt < 50; ++attempt) {
      OpenOptions o;
      o.pchannel = "ch";
      o.term = Term(++term_);
      auto b = opener->Open(o);
      if (b.ok()) return *std::move(b);
      EXPECT_TRUE(absl::IsUnavailable(b.status())) << b.status();
      absl::SleepFor(absl::Milliseconds(100));
    }
    ADD_FAILURE() << "no writer";
    return nullptr;
  }

  // Every entry up to `writer`'s end, checked against the acknowledged set: each acknowledged
  // payload exactly once.
  void ExpectAllAckedOnce(WalBackend* writer) {
    const MessageId end = writer->NextId();
    auto scanner = writer->Read({});
    ASSERT_TRUE(scanner.ok()) << scanner.status();
    std::map<std::string, int> seen;
    for (;;) {
      auto e = (*scanner)->Next(absl::Now() + absl::Seconds(10));
      ASSERT_TRUE(e.ok()) << e.status();
      ++seen[e->data];
      if (MessageId(WalKind::kQuorum, e->id.segment(), e->id.entry() + 1) == end) break;
    }
    absl::MutexLock l(&mu_);
    for (const auto& p : acked_) EXPECT_EQ(seen[p], 1) << p;
    for (const auto& [p, n] : seen) EXPECT_EQ(n, 1) << p;
  }

  TempDir dir_;
  std::vector<std::unique_ptr<ServerProcess>> stores_;
  std::vector<std::string> addresses_;
  std::unique_ptr<meta::EmbeddedMetaStore> meta_;
  int64_t term_ = 0;
  absl::Mutex mu_;
  std::set<std::string> acked_ ABSL_GUARDED_BY(mu_);
};

TEST_F(LogStoreKillTest, OneOfThreeKilledWritesGoOn) {
  StartLogStores(3);
  auto opener = NewQuorumOpener(Options());
  auto writer = OpenWriter(opener.get());
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(Append(writer.get(), 0, 100).ok());
  stores_[1]->Kill();
  ASSERT_TRUE(Append(writer.get(), 100, 100).ok());
  ASSERT_TRUE(stores_[1]->Start()) << stores_[1]->Output();
  ASSERT_TRUE(Append(writer.get(), 200, 100).ok());
  ExpectAllAckedOnce(writer.get());
  ASSERT_TRUE(writer->Close().ok());
  // A new writer recovers the same log.
  auto next = OpenWriter(opener.get());
  ASSERT_NE(next, nullptr);
  ASSERT_TRUE(Append(next.get(), 300, 10).ok());
  ExpectAllAckedOnce(next.get());
  ASSERT_TRUE(next->Close().ok());
}

TEST_F(LogStoreKillTest, TwoOfThreeKilledWritesStopThenResume) {
  StartLogStores(3);
  auto opener = NewQuorumOpener(Options());
  auto writer = OpenWriter(opener.get());
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(Append(writer.get(), 0, 100).ok());
  stores_[0]->Kill();
  stores_[2]->Kill();
  absl::Status failed = Append(writer.get(), 100, 10);
  EXPECT_TRUE(absl::IsUnavailable(failed)) << failed;
  EXPECT_NE(failed.message().find("not durable on 2 of 3 logstores"), std::string::npos) << failed;
  EXPECT_TRUE(absl::IsFailedPrecondition(writer->Append("x", nullptr).status()));
  ASSERT_TRUE(stores_[0]->Start()) << stores_[0]->Output();
  ASSERT_TRUE(stores_[2]->Start()) << stores_[2]->Output();
  auto next = OpenWriter(opener.get());
  ASSERT_NE(next, nullptr);
  ASSERT_TRUE(Append(next.get(), 200, 100).ok());
  ExpectAllAckedOnce(next.get());
  (void)writer->Close();
  ASSERT_TRUE(next->Close().ok());
}

// The same through the server: `kingfisher run standalone --wal-backend quorum` over the three
// logstores. With 2 killed an append is not acknowledged; once they are back the node reopens
// the pchannel's WAL by itself and appends are acknowledged again.
TEST_F(LogStoreKillTest, StandaloneOverTwoDeadLogStoresResumesAfterTheirRestart) {
  StartLogStores(3);
  ServerProcess server(
      ServerProcess::Options{.data_dir = dir_.path() + "/standalone",
                             .extra_args = {"--wal-backend", "quorum", "--logstores",
                                            absl::StrJoin(addresses_, ","), "--pchannels", "1"}});
  ASSERT_TRUE(server.Start()) << server.Output();
  kingfisher::ClientOptions options;
  options.endpoint = server.address();
  options.append_timeout = std::chrono::seconds(60);
  auto client = kingfisher::Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  auto producer = (*client)->CreateProducer();
  ASSERT_TRUE(producer.ok()) << producer.status();
  auto append = [&](const std::string& payload, kingfisher::Duration timeout) {
    kingfisher::Message m{
        .type = kingfisher::MessageType::kInsert, .vchannel = "kf-dml_0_kill", .payload = payload};
    return (*producer)
        ->Append(std::move(m), {.deadline = kingfisher::Clock::now() + timeout})
        .get();
  };
  ASSERT_TRUE(append("before", std::chrono::seconds(30)).ok());
  stores_[0]->Kill();
  stores_[2]->Kill();
  // Longer than the backend's ack timeout (10 s): the WAL breaks, nothing is acknowledged.
  auto lost = append("during", std::chrono::seconds(15));
  EXPECT_FALSE(lost.ok());
  EXPECT_TRUE(absl::IsUnavailable(lost.status()) || absl::IsDeadlineExceeded(lost.status()))
      << lost.status();
  ASSERT_TRUE(stores_[0]->Start()) << stores_[0]->Output();
  ASSERT_TRUE(stores_[2]->Start()) << stores_[2]->Output();
  auto after = append("after", std::chrono::seconds(60));
  ASSERT_TRUE(after.ok()) << after.status() << "\n" << server.Output();
  auto consumer = (*client)->CreateConsumer(
      {.vchannel = "kf-dml_0_kill", .policy = kingfisher::DeliverPolicy::All()});
  ASSERT_TRUE(consumer.ok()) << consumer.status();
  std::map<std::string, int> seen;
  while (seen["after"] == 0) {
    auto m = (*consumer)->Next(kingfisher::Clock::now() + std::chrono::seconds(30));
    ASSERT_TRUE(m.ok()) << m.status();
    if (m->type == kingfisher::MessageType::kInsert) ++seen[m->payload];
  }
  EXPECT_EQ(seen["before"], 1);
  EXPECT_LE(seen["during"], 1);
  EXPECT_EQ(seen["after"], 1);
}

TEST_F(LogStoreKillTest, FourLogStoresKilledOneIsReplaced) {
  StartLogStores(4);
  auto options = Options();
  options.segment_bytes = 1000;  // ~200 entries per segment
  auto opener = NewQuorumOpener(options);
  auto writer = OpenWriter(opener.get());
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(Append(writer.get(), 0, 50).ok());
  QuorumMeta meta(meta_.get(), options.meta_prefix, "ch");
  auto segments = meta.List(absl::InfiniteFuture());
  ASSERT_TRUE(segments.ok());
  const std::string victim = segments->rbegin()->second.meta.ensemble(1);
  const uint64_t killed_in = segments->rbegin()->first;
  stores_[static_cast<size_t>(IndexOf(victim))]->Kill();
  for (int i = 50; i < 1500; i += 50) ASSERT_TRUE(Append(writer.get(), i, 50).ok());
  segments = meta.List(absl::InfiniteFuture());
  ASSERT_TRUE(segments.ok());
  int later = 0;
  LogStorePool pool;
  for (const auto& [id, rec] : *segments) {
    if (id <= killed_in + 1) continue;  // the next roll may pick it before a call to it failed
    ++later;
    ASSERT_EQ(rec.meta.ensemble_size(), 3);
    for (const auto& a : rec.meta.ensemble()) {
      EXPECT_NE(a, victim) << "segment " << id;
      // Every member is a live logstore that holds the segment.
      kingfisher::v1::ReadEntriesRequest req;
      req.set_log("ch");
      req.set_segment(id);
      auto r = pool.Get(a)->ReadEntries(req, absl::Now() + absl::Seconds(5));
      EXPECT_TRUE(r.ok()) << a << ": " << r.status();
    }
  }
  EXPECT_GE(later, 3);
  ExpectAllAckedOnce(writer.get());
  ASSERT_TRUE(writer->Close().ok());
}

}  // namespace
}  // namespace kf::wal::quorum
