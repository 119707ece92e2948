#include "wal/wal.h"

#include <unistd.h>

#include <filesystem>
#include <future>
#include <thread>

#include "common/errors.h"
#include "gtest/gtest.h"
#include "message/builders.h"
#include "message/message_trace.h"
#include "storage/tso/timestamp_allocator.h"
#include "trace/testing/scoped_in_memory_tracing.h"
#include "trace/tracer.h"
#include "wal/testing/memory_backend.h"

namespace kf::wal {
namespace {

using testing::MemoryWalBackend;

MutableMessage Raw(std::string vchannel, std::string payload, std::string ik = "") {
  MutableMessage m(MessageType::kInsert, std::move(payload));
  m.set_vchannel(std::move(vchannel));
  if (!ik.empty()) m.set_idempotency_key(std::move(ik));
  return m;
}

class WalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kf-wal-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    tso_ = *TimestampAllocator::Open((dir_ / "tso").string(), {});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Wal> Open(std::unique_ptr<MemoryWalBackend> b, WalOptions o = {}) {
    o.tso = tso_.get();
    auto wal = OpenWal(std::move(o), std::move(b));
    EXPECT_TRUE(wal.ok()) << wal.status();
    return std::move(*wal);
  }

  static std::vector<MutableMessage> Decoded(const MemoryWalBackend& b) {
    std::vector<MutableMessage> out;
    for (auto& e : b.DurableEntries()) out.push_back(*MutableMessage::Decode(e));
    return out;
  }

  std::vector<trace::SpanData> Spans(const std::string& name) const {
    return tracing_.SpansNamed(name);
  }

  std::filesystem::path dir_;
  std::unique_ptr<TimestampAllocator> tso_;
  trace::testing::ScopedInMemoryTracing tracing_;
};

TEST_F(WalTest, TimeticksStrictlyIncreaseInWalOrderUnderConcurrency) {
  auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0");
  auto* b = backend.get();
  auto wal = Open(std::move(backend), {.timetick_interval = absl::Hours(1)});
  std::vector<std::thread> threads;
  std::mutex mu;
  std::vector<AppendResult> results;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        auto r = wal->AppendSync({}, Raw("kf-dml_0_v", std::to_string(t * 1000 + i)));
        ASSERT_TRUE(r.ok()) << r.status();
        std::lock_guard l(mu);
        results.push_back(*r);
      }
    });
  }
  for (auto& th : threads) th.join();
  auto log = Decoded(*b);
  ASSERT_EQ(log.size(), 1600u);
  for (size_t i = 1; i < log.size(); ++i) {
    EXPECT_LT(*log[i - 1].timetick(), *log[i].timetick()) << i;
  }
  for (auto& r : results) {
    const MutableMessage& stored = log[r.id.entry()];
    EXPECT_EQ(*stored.timetick(), r.timetick);
    EXPECT_TRUE(stored.last_confirmed_is_self());
    EXPECT_EQ(r.last_confirmed, r.id);
    EXPECT_EQ(stored.wal_term(), Term(1));
  }
}

TEST_F(WalTest, RetriedKeyReturnsOriginalResultAndStoresOnce) {
  auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0");
  auto* b = backend.get();
  auto wal = Open(std::move(backend), {.timetick_interval = absl::Hours(1)});
  auto first = wal->AppendSync({}, Raw("kf-dml_0_v", "x", "prod:1"));
  auto again = wal->AppendSync({}, Raw("kf-dml_0_v", "x", "prod:1"));
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(first->id, again->id);
  EXPECT_EQ(first->timetick, again->timetick);
  EXPECT_EQ(b->DurableEntries().size(), 1u);
}

TEST_F(WalTest, DuplicateOfInFlightAppendWaitsForTheOriginal) {
  auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0", Term(1), /*auto_durable=*/false);
  auto* b = backend.get();
  auto wal = Open(std::move(backend), {.timetick_interval = absl::Hours(1)});
  std::promise<absl::StatusOr<AppendResult>> p1, p2;
  wal->Append({}, Raw("kf-dml_0_v", "x", "prod:7"), [&](auto r) { p1.set_value(r); });
  wal->Append({}, Raw("kf-dml_0_v", "x", "prod:7"), [&](auto r) { p2.set_value(r); });
  EXPECT_EQ(b->Attempts().size(), 1u);
  b->MakeDurable(1);
  auto r1 = p1.get_future().get(), r2 = p2.get_future().get();
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1->id, r2->id);
}

TEST_F(WalTest, IdempotencyAndTimeticksSurviveReopen) {
  auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0");
  auto* b = backend.get();
  auto wal = Open(std::move(backend), {.timetick_interval = absl::Hours(1)});
  auto first = wal->AppendSync({}, Raw("kf-dml_0_v", "x", "prod:1"));
  ASSERT_TRUE(first.ok());
  wal->Close();
  auto reopened = b->Reopen(Term(2));
  // A new process: a fresh TSO whose clock is far behind the log.
  tso_ = *TimestampAllocator::Open((dir_ / "tso2").string(), {.now_ms = [] { return 1ull; }});
  auto wal2 = Open(std::move(reopened), {.timetick_interval = absl::Hours(1)});
  auto again = wal2->AppendSync({}, Raw("kf-dml_0_v", "x", "prod:1"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id, first->id);
  auto next = wal2->AppendSync({}, Raw("kf-dml_0_v", "y", "prod:2"));
  ASSERT_TRUE(next.ok());
  EXPECT_GT(next->timetick, first->timetick);
}

TEST_F(WalTest, MalformedIdempotencyKeyIsInvalidArgument) {
  auto wal = Open(std::make_unique<MemoryWalBackend>("kf-dml_0"));
  EXPECT_EQ(wal->AppendSync({}, Raw("kf-dml_0_v", "x", "nocolon")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// docs/tracing.md §8 scenario 10.
TEST_F(WalTest, EachAttemptHasItsOwnAppendImplSpanAndTheLastIsPersisted) {
  auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0");
  auto* b = backend.get();
  auto wal = Open(std::move(backend),
                  {.timetick_interval = absl::Hours(1), .initial_backoff = absl::Microseconds(1)});
  b->FailNextAppends(2, absl::ResourceExhaustedError("queue full"));
  auto [root_ctx, root] = trace::WalTracer()->StartSpan({}, "wal.autocommit");
  MutableMessage msg = Raw("kf-dml_0_v", "x");
  InjectTraceContext(root_ctx, &msg);
  ASSERT_TRUE(wal->AppendSync(root_ctx, std::move(msg)).ok());
  root->End();

  auto impls = Spans("wal.appendimpl");
  auto appends = Spans("wal.append");
  ASSERT_EQ(impls.size(), 3u);
  ASSERT_EQ(appends.size(), 1u);
  EXPECT_EQ(appends[0].parent_span_id, root->context().span_id);
  for (auto& s : impls) EXPECT_EQ(s.parent_span_id, appends[0].context.span_id);
  EXPECT_EQ(impls[0].status, trace::SpanStatusCode::kError);
  EXPECT_EQ(impls[1].status, trace::SpanStatusCode::kError);
  // What the backend received on each attempt carries that attempt's span; the stored one is
  // the last attempt's.
  auto attempts = b->Attempts();
  ASSERT_EQ(attempts.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    auto m = *MutableMessage::Decode(attempts[i]);
    EXPECT_EQ(ExtractTraceContext({}, m).span_context().span_id, impls[i].context.span_id);
  }
  auto stored = Decoded(*b);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(ExtractTraceContext({}, stored[0]).span_context().span_id, impls[2].context.span_id);
}

TEST_F(WalTest, TimeTickAppendsHaveNoSpansAndNoTraceContext) {
  auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0");
  auto* b = backend.get();
  auto wal = Open(std::move(backend), {.timetick_interval = absl::Milliseconds(1)});
  ASSERT_TRUE(wal->AppendSync({}, Raw("kf-dml_0_v", "x")).ok());
  // The ticker appends a persisted TimeTick after traffic; wait for it through a scanner.
  auto scanner = *wal->Read({});
  bool saw_tick = false;
  while (!saw_tick) {
    auto m = scanner->Next({}, absl::Now() + absl::Seconds(10));
    ASSERT_TRUE(m.ok()) << m.status();
    saw_tick = (*m)->type() == MessageType::kTimeTick;
    if (saw_tick) {
      EXPECT_FALSE((*m)->message().HasProperty(prop::kTraceContext));
      EXPECT_GT((*m)->timetick(), TimeTick(0));
    }
  }
  wal->Close();
  EXPECT_EQ(Spans("wal.appendimpl").size(), 1u);
  EXPECT_EQ(Spans("wal.append").size(), 1u);
  for (auto& e : b->DurableEntries()) {
    auto m = *MutableMessage::Decode(e);
    if (m.type() == MessageType::kTimeTick) {
      EXPECT_FALSE(m.HasProperty(prop::kTraceContext));
    }
  }
}

TEST_F(WalTest, DurablePathFailureIsStickyAndAmbiguous) {
  auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0", Term(1), false);
  auto* b = backend.get();
  auto wal = Open(std::move(backend), {.timetick_interval = absl::Hours(1)});
  std::promise<absl::StatusOr<AppendResult>> p;
  wal->Append({}, Raw("kf-dml_0_v", "x"), [&](auto r) { p.set_value(r); });
  b->FailPending(absl::InternalError("fdatasync: EIO"));
  EXPECT_EQ(p.get_future().get().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(wal->AppendSync({}, Raw("kf-dml_0_v", "y")).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(WalTest, FencedBackendMakesTheWalReportFenced) {
  auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0", Term(1), false);
  auto* b = backend.get();
  auto wal = Open(std::move(backend), {.timetick_interval = absl::Hours(1)});
  std::promise<absl::StatusOr<AppendResult>> p;
  wal->Append({}, Raw("kf-dml_0_v", "x"), [&](auto r) { p.set_value(r); });
  b->FailPending(FencedError("term 2 took over"));
  EXPECT_TRUE(IsFenced(p.get_future().get().status()));
  EXPECT_TRUE(IsFenced(wal->AppendSync({}, Raw("kf-dml_0_v", "y")).status()));
}

TEST_F(WalTest, CloseFinishesInFlightAndRejectsLater) {
  auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0");
  auto wal = Open(std::move(backend));
  ASSERT_TRUE(wal->AppendSync({}, Raw("kf-dml_0_v", "x")).ok());
  wal->Close();
  auto r = wal->AppendSync({}, Raw("kf-dml_0_v", "y"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(GetStreamingCode(r.status()), StreamingCode::kOnShutdown);
}

TEST_F(WalTest, ScannerPoliciesAndVChannelFilter) {
  auto wal =
      Open(std::make_unique<MemoryWalBackend>("kf-dml_0"), {.timetick_interval = absl::Hours(1)});
  std::vector<AppendResult> r;
  for (int i = 0; i < 6; ++i) {
    r.push_back(*wal->AppendSync({}, Raw(i % 2 ? "kf-dml_0_b" : "kf-dml_0_a", std::to_string(i))));
  }
  auto read_all = [&](ScanOptions o) {
    auto s = *wal->Read(o);
    std::vector<std::string> got;
    for (;;) {
      auto m = s->Next({}, absl::Now() + absl::Milliseconds(50));
      if (absl::IsDeadlineExceeded(m.status())) break;
      EXPECT_TRUE(m.ok()) << m.status();
      if (!m.ok()) break;
      got.push_back((*m)->message().payload());
    }
    return got;
  };
  using K = DeliverPolicy::Kind;
  EXPECT_EQ(read_all({}), (std::vector<std::string>{"0", "1", "2", "3", "4", "5"}));
  EXPECT_EQ(read_all({.vchannel = "kf-dml_0_a"}), (std::vector<std::string>{"0", "2", "4"}));
  EXPECT_EQ(read_all({.policy = {K::kStartFrom, r[3].id}}),
            (std::vector<std::string>{"3", "4", "5"}));
  EXPECT_EQ(read_all({.policy = {K::kStartAfter, r[3].id}}), (std::vector<std::string>{"4", "5"}));
  EXPECT_TRUE(read_all({.policy = {K::kLatest, {}}}).empty());
  EXPECT_EQ(wal->Read({.policy = {K::kStartFrom, {}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// docs/tracing.md §8 scenario 11 (non-txn part): one wal.catchup_consume per non-txn message,
// child of the persisted context, and the delivered `_tc` is the consume span.
TEST_F(WalTest, CatchupReadMarksEachMessageWithAConsumeSpan) {
  auto wal =
      Open(std::make_unique<MemoryWalBackend>("kf-dml_0"), {.timetick_interval = absl::Hours(1)});
  ASSERT_TRUE(wal->AppendSync({}, Raw("kf-dml_0_a", "x")).ok());
  auto impl = Spans("wal.appendimpl");
  ASSERT_EQ(impl.size(), 1u);
  auto s = *wal->Read({});
  auto m = s->Next({}, absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(m.ok());
  auto consume = Spans("wal.catchup_consume");
  ASSERT_EQ(consume.size(), 1u);
  EXPECT_EQ(consume[0].parent_span_id, impl[0].context.span_id);
  EXPECT_EQ(consume[0].context.trace_id, impl[0].context.trace_id);
  EXPECT_EQ(consume[0].kind, trace::SpanKind::kConsumer);
  EXPECT_EQ(ExtractTraceContext({}, (*m)->message()).span_context().span_id,
            consume[0].context.span_id);
}

}  // namespace
}  // namespace kf::wal
