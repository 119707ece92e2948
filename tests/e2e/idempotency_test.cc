// Idempotency acceptance test (docs/semantics.md §3 "exactly once under retries"), over real
// processes: the server is killed after a batch is durable but before its acks are sent (test hook
// KINGFISHER_TEST_CRASH_AFTER_DURABLE); the client library retries with the same `_ik` once the
// server is back, gets the original results, and no message is stored twice. The appends are
// all in flight at once, so they travel in batches: the crash falls in the middle of one, and
// the retries must keep the producer's order.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kingfisher/client.h"
#include "kingfisher/consumer.h"
#include "kingfisher/producer.h"
#include "server_process.h"

namespace kf {
namespace {

using testing::ServerProcess;
using testing::TempDir;

constexpr char kVChannel[] = "kf-dml_1_idem";
constexpr int kMessages = 40;
constexpr int kCrashAfter = 10;  // the 10th durable append kills the server before its ack

kingfisher::Message Payload(int i) {
  kingfisher::Message m{.type = kingfisher::MessageType::kInsert,
                        .vchannel = kVChannel,
                        .payload = "msg-" + std::to_string(i)};
  return m;
}

TEST(IdempotencyE2E, RetriesAfterACrashBeforeTheAckReturnTheOriginalResults) {
  TempDir dir;
  ServerProcess server(
      {.data_dir = dir.path() + "/data",
       .env = {{"KINGFISHER_TEST_CRASH_AFTER_DURABLE", std::to_string(kCrashAfter)}},
       .binary = "kingfisher-crash-hook"});
  ASSERT_TRUE(server.Start()) << server.Output();

  auto client = kingfisher::Client::Connect({.endpoint = server.address(),
                                             .append_timeout = std::chrono::seconds(60),
                                             .attempt_timeout = std::chrono::seconds(5)});
  ASSERT_TRUE(client.ok()) << client.status();
  auto producer = (*client)->CreateProducer();
  ASSERT_TRUE(producer.ok()) << producer.status();

  // All appends in flight at once: some become durable, the hook fires before their acks.
  std::vector<std::future<absl::StatusOr<kingfisher::AppendResult>>> pending;
  for (int i = 0; i < kMessages; ++i) pending.push_back((*producer)->Append(Payload(i)));

  auto crashed = server.WaitForExit(absl::Seconds(30));
  ASSERT_TRUE(crashed.exited) << crashed.output;
  ASSERT_EQ(crashed.exit_code, 137) << "the crash hook did not fire:\n" << crashed.output;

  // Same data dir, same address, no hook: the producer's retries land here.
  ServerProcess restarted({.data_dir = dir.path() + "/data", .listen = server.address()});
  ASSERT_TRUE(restarted.Start()) << restarted.Output();
  const absl::Time restarted_at = absl::Now();

  std::map<std::string, kingfisher::AppendResult> results;  // payload -> result
  for (int i = 0; i < kMessages; ++i) {
    auto r = pending[i].get();
    ASSERT_TRUE(r.ok()) << "msg-" << i << ": " << r.status() << "\nserver log:\n"
                        << restarted.Output();
    results.emplace("msg-" + std::to_string(i), *r);
  }
  // Informational (no timing assertion): how long the retries took once the server was back.
  std::printf("appends completed %s after the restart\n",
              absl::FormatDuration(absl::Now() - restarted_at).c_str());

  // Read the whole vchannel back: every payload exactly once, at the id its ack named.
  auto consumer = (*client)->CreateConsumer(
      {.vchannel = kVChannel, .policy = kingfisher::DeliverPolicy::All()});
  ASSERT_TRUE(consumer.ok()) << consumer.status();
  std::map<std::string, int> seen;
  std::vector<int> order;  // message numbers, in log order
  while (seen.size() < results.size()) {
    auto m = (*consumer)->Next(kingfisher::Clock::now() + std::chrono::seconds(10));
    ASSERT_TRUE(m.ok()) << m.status() << " after " << seen.size() << " messages";
    if (m->type != kingfisher::MessageType::kInsert) continue;
    if (seen[m->payload]++ == 0) order.push_back(std::stoi(m->payload.substr(4)));
    auto it = results.find(m->payload);
    ASSERT_NE(it, results.end()) << "unexpected payload " << m->payload;
    EXPECT_EQ(it->second.id, m->id) << m->payload;
    EXPECT_EQ(it->second.timetick, m->timetick) << m->payload;
  }
  // Anything stored twice was appended before every retry returned, so it would come before
  // the first kingfisher::TimeTick above the last acknowledged timetick (persisted, or `_np` when
  // idle).
  kingfisher::TimeTick last_acked;
  for (const auto& [payload, r] : results) last_acked = std::max(last_acked, r.timetick);
  for (;;) {
    auto m = (*consumer)->Next(kingfisher::Clock::now() + std::chrono::seconds(10));
    ASSERT_TRUE(m.ok()) << m.status()
                        << " while waiting for a kingfisher::TimeTick past the last ack";
    if (m->type == kingfisher::MessageType::kTimeTick && m->timetick > last_acked) break;
    if (m->type == kingfisher::MessageType::kInsert) ++seen[m->payload];
  }
  for (auto& [payload, n] : seen) EXPECT_EQ(n, 1) << payload << " stored " << n << " times";
  // One producer, one vchannel: the log holds its messages in the order they were appended,
  // across the batches, the crash and the retries.
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end())) << ::testing::PrintToString(order);
  EXPECT_EQ(seen.size(), static_cast<size_t>(kMessages));
}

}  // namespace
}  // namespace kf
