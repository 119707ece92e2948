#include "wal/buffer/switchable_scanner.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "wal/buffer/buffer_test_util.h"

namespace kf::wal {
namespace {

using ::kf::wal::testing::FakeCatchupScanner;
using ::kf::wal::testing::FakeClock;
using ::kf::wal::testing::FakeLog;
using ::kf::wal::testing::Id;
using ::kf::wal::testing::Msg;
using ::kf::wal::testing::NpTick;
using ::kf::wal::testing::Tick;

const absl::Time kPast = absl::InfinitePast();

class SwitchableScannerTest : public ::testing::Test {
 protected:
  void MakeBuffer(WriteAheadBufferOptions options = {}) {
    buffer_ = WriteAheadBuffer::Create(std::move(options));
  }

  // Persisted and, like the adaptor does once durable, handed to the buffer.
  void Durable(ImmutableMessagePtr m, bool to_buffer = true) {
    log_.Add(m);
    if (to_buffer) {
      ASSERT_TRUE(buffer_->Append(m).ok());
    }
  }

  std::unique_ptr<SwitchableScanner> NewScanner(MessageId start, bool start_after = false,
                                                std::string vchannel = "") {
    SwitchableScannerOptions o;
    o.buffer = buffer_;
    o.vchannel = vchannel;
    o.start = start;
    o.start_after = start_after;
    o.open_catchup = [this,
                      vchannel](const MessageId& from) -> absl::StatusOr<std::unique_ptr<Scanner>> {
      catchup_starts_.push_back(from);
      if (!factory_error_.ok()) return factory_error_;
      return std::make_unique<FakeCatchupScanner>(&log_, from, vchannel);
    };
    return std::make_unique<SwitchableScanner>(std::move(o));
  }

  // Reads until DEADLINE_EXCEEDED; records each message's offset and whether it came from the
  // buffer (pointer-equal to the buffered object) or from catch-up (a decoded copy).
  struct Read {
    uint64_t offset;
    uint64_t timetick;
    ScanMode mode;
  };
  std::vector<Read> Drain(SwitchableScanner& s) {
    std::vector<Read> out;
    for (;;) {
      auto m = s.Next(trace::Context(), kPast);
      if (!m.ok()) {
        EXPECT_EQ(m.status().code(), absl::StatusCode::kDeadlineExceeded) << m.status();
        return out;
      }
      out.push_back({(*m)->id().entry(), (*m)->timetick().value(), s.mode()});
    }
  }
  static std::vector<uint64_t> Offsets(const std::vector<Read>& reads) {
    std::vector<uint64_t> out;
    for (const Read& r : reads) out.push_back(r.offset);
    return out;
  }

  std::shared_ptr<WriteAheadBuffer> buffer_ = WriteAheadBuffer::Create();
  FakeLog log_;
  std::vector<MessageId> catchup_starts_;
  absl::Status factory_error_;
};

TEST_F(SwitchableScannerTest, CatchesUpFromTheBackendThenTailsSharedMessages) {
  // 1..5 were written before this buffer existed (e.g. before a restart).
  MakeBuffer({.starts_after = Id(5)});
  for (uint64_t i = 1; i <= 5; ++i) Durable(Msg(i, 10 * i), /*to_buffer=*/false);
  std::vector<ImmutableMessagePtr> buffered;
  for (uint64_t i = 6; i <= 8; ++i) {
    buffered.push_back(Msg(i, 10 * i));
    Durable(buffered.back());
  }
  auto s = NewScanner(Id(2));
  EXPECT_EQ(s->mode(), ScanMode::kCatchup);

  for (uint64_t i = 2; i <= 5; ++i) {
    auto m = s->Next(trace::Context(), kPast);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ((*m)->id(), Id(i));
    EXPECT_EQ(s->mode(), ScanMode::kCatchup);
  }
  for (const ImmutableMessagePtr& want : buffered) {
    auto m = s->Next(trace::Context(), kPast);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->get(), want.get());  // the buffer's object itself: no copy, no mutation
    EXPECT_EQ(s->mode(), ScanMode::kTailing);
  }
  EXPECT_EQ(s->Next(trace::Context(), kPast).status().code(), absl::StatusCode::kDeadlineExceeded);
  ImmutableMessagePtr live = Msg(9, 90);
  Durable(live);
  auto m = s->Next(trace::Context(), kPast);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->get(), live.get());
  EXPECT_EQ(s->catchup_opens(), 1);
  EXPECT_EQ(s->tailing_switches(), 1);
  EXPECT_THAT(catchup_starts_, ::testing::ElementsAre(Id(2)));
}

TEST_F(SwitchableScannerTest, WithoutAKnownStartTheFirstBufferedMessageComesFromCatchup) {
  // The buffer cannot know that nothing lies between 1 and its first message 2.
  Durable(Msg(1, 10), /*to_buffer=*/false);
  Durable(Msg(2, 20));
  Durable(Msg(3, 30));
  auto s = NewScanner(Id(1));
  std::vector<Read> reads = Drain(*s);
  EXPECT_THAT(Offsets(reads), ::testing::ElementsAre(1, 2, 3));
  EXPECT_EQ(reads[1].mode, ScanMode::kCatchup);
  EXPECT_EQ(reads[2].mode, ScanMode::kTailing);
}

TEST_F(SwitchableScannerTest, StartsTailingWithoutOpeningCatchupWhenTheBufferHoldsTheStart) {
  for (uint64_t i = 1; i <= 3; ++i) Durable(Msg(i, 10 * i));
  auto s = NewScanner(Id(1), /*start_after=*/true);
  EXPECT_THAT(Offsets(Drain(*s)), ::testing::ElementsAre(2, 3));
  EXPECT_EQ(s->catchup_opens(), 0);
  EXPECT_EQ(s->mode(), ScanMode::kTailing);
}

TEST_F(SwitchableScannerTest, ExclusiveStartInCatchupSkipsTheStartMessage) {
  for (uint64_t i = 1; i <= 4; ++i) Durable(Msg(i, 10 * i), /*to_buffer=*/false);
  auto s = NewScanner(Id(2), /*start_after=*/true);
  EXPECT_THAT(Offsets(Drain(*s)), ::testing::ElementsAre(3, 4));
  EXPECT_THAT(catchup_starts_, ::testing::ElementsAre(Id(2)));
}

TEST_F(SwitchableScannerTest, LaggingReaderFallsBackFromTheLcmidAndResumesWithoutGapOrDuplicate) {
  const size_t one = Msg(1, 10, "", 1)->message().EncodedSize();
  MakeBuffer({.capacity_bytes = 3 * one + one / 2});
  // Every LCMID points two messages back, as with an open transaction.
  auto lc = [](uint64_t i) { return i > 2 ? i - 2 : 1; };
  for (uint64_t i = 1; i <= 3; ++i) Durable(Msg(i, 10 * i, "", lc(i)));
  auto s = NewScanner(Id(1));
  std::vector<Read> reads = Drain(*s);
  EXPECT_THAT(Offsets(reads), ::testing::ElementsAre(1, 2, 3));
  EXPECT_EQ(s->mode(), ScanMode::kTailing);

  // The reader lags while the writer appends far past the capacity: no waiting for it.
  for (uint64_t i = 4; i <= 12; ++i) Durable(Msg(i, 10 * i, "", lc(i)));
  ASSERT_EQ(buffer_->horizon(), Id(9));

  reads = Drain(*s);
  EXPECT_THAT(Offsets(reads), ::testing::ElementsAre(4, 5, 6, 7, 8, 9, 10, 11, 12));
  // Catch-up reopened at the LCMID of 3 (= 1), re-read 1..3 silently, and delivered 4..9;
  // then the buffer covered the position again.
  EXPECT_THAT(catchup_starts_, ::testing::ElementsAre(Id(1)));
  for (const Read& r : reads) {
    EXPECT_EQ(r.mode, r.offset <= 9 ? ScanMode::kCatchup : ScanMode::kTailing) << r.offset;
  }
  EXPECT_EQ(s->tailing_switches(), 2);
}

// Found by wal_model_test (seed 20250602): a vchannel reader started inside an open
// transaction only consumed other vchannels' messages, so it had delivered nothing when the
// buffer evicted its position; the fallback reopened catch-up at the LCMID (the txn's Begin,
// before the start) and delivered this vchannel's messages from before the start.
TEST_F(SwitchableScannerTest, FallbackFromAnLcmidBeforeTheStartDeliversNothingBeforeTheStart) {
  const size_t one = Msg(1, 10, "kf-dml_0_2v0", 1)->message().EncodedSize();
  MakeBuffer({.capacity_bytes = 3 * one + one / 2});
  Durable(Msg(1, 10, "kf-dml_0_1v0"));     // e.g. a Begin on the reader's vchannel
  Durable(Msg(2, 20, "kf-dml_0_2v0", 1));  // LCMIDs point back at it while it is open
  Durable(Msg(3, 30, "kf-dml_0_2v0", 1));
  auto s = NewScanner(Id(2), /*start_after=*/false, "kf-dml_0_1v0");
  EXPECT_TRUE(Drain(*s).empty());
  EXPECT_EQ(s->mode(), ScanMode::kTailing);
  for (uint64_t i = 4; i <= 8; ++i) Durable(Msg(i, 10 * i, "kf-dml_0_2v0", 1));
  Durable(Msg(9, 90, "kf-dml_0_1v0", 1));
  std::vector<Read> reads = Drain(*s);
  EXPECT_THAT(Offsets(reads), ::testing::ElementsAre(9));
  EXPECT_THAT(catchup_starts_, ::testing::ElementsAre(Id(1)));  // the fallback happened
}

TEST_F(SwitchableScannerTest, FullCycleCatchupTailingCatchupTailing) {
  FakeClock clock;
  MakeBuffer({.keepalive = absl::Seconds(30),
              .clock = [&clock] { return clock.Now(); },
              .starts_after = Id(1)});
  Durable(Msg(1, 10), /*to_buffer=*/false);
  Durable(Msg(2, 20));
  auto s = NewScanner(Id(1));

  std::vector<Read> reads = Drain(*s);
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_EQ(reads[0].mode, ScanMode::kCatchup);
  EXPECT_EQ(reads[1].mode, ScanMode::kTailing);

  // 3 and 4 expire before the reader gets to them.
  Durable(Msg(3, 30));
  Durable(Msg(4, 40));
  clock.Advance(absl::Seconds(31));
  buffer_->EvictExpired();
  Durable(Msg(5, 50));

  reads = Drain(*s);
  EXPECT_THAT(Offsets(reads), ::testing::ElementsAre(3, 4, 5));
  EXPECT_EQ(reads[0].mode, ScanMode::kCatchup);
  EXPECT_EQ(reads[1].mode, ScanMode::kCatchup);
  EXPECT_EQ(reads[2].mode, ScanMode::kTailing);
  EXPECT_EQ(s->catchup_opens(), 2);
  EXPECT_EQ(s->tailing_switches(), 2);
  EXPECT_THAT(catchup_starts_, ::testing::ElementsAre(Id(1), Id(2)));
}

TEST_F(SwitchableScannerTest, NonPersistedTicksAreTailedAndTimeticksNeverRedelivered) {
  const size_t big = 4 * Msg(1, 10)->message().EncodedSize();
  MakeBuffer({.capacity_bytes = big});
  Durable(Msg(1, 10));
  ASSERT_TRUE(buffer_->Append(NpTick(1, 15)).ok());
  Durable(Tick(2, 20, /*lc=*/1));
  auto s = NewScanner(Id(1));
  std::vector<Read> reads = Drain(*s);
  ASSERT_EQ(reads.size(), 3u);
  EXPECT_EQ(reads[1].timetick, 15u);  // the non-persisted tick, from the buffer only
  EXPECT_EQ(reads[2].timetick, 20u);

  // Evict everything the reader has not read yet: it falls back to catch-up at the LCMID of
  // the persisted tick (1) and must skip 1 and the tick it already delivered.
  ASSERT_TRUE(buffer_->Append(NpTick(2, 25)).ok());
  for (uint64_t i = 3; i <= 8; ++i) Durable(Msg(i, 10 * i));
  reads = Drain(*s);
  std::vector<uint64_t> ticks;
  for (const Read& r : reads) ticks.push_back(r.timetick);
  // The evicted non-persisted tick 25 is gone (ticks only advance the watermark).
  EXPECT_THAT(ticks, ::testing::ElementsAre(30, 40, 50, 60, 70, 80));
  EXPECT_THAT(catchup_starts_, ::testing::ElementsAre(Id(1)));
}

TEST_F(SwitchableScannerTest, EvictedNonPersistedTickAloneDoesNotForceCatchup) {
  FakeClock clock;
  MakeBuffer({.keepalive = absl::Seconds(30), .clock = [&clock] { return clock.Now(); }});
  Durable(Msg(1, 10));
  auto s = NewScanner(Id(1));
  ASSERT_EQ(Drain(*s).size(), 1u);
  ASSERT_TRUE(buffer_->Append(NpTick(1, 15)).ok());
  clock.Advance(absl::Seconds(31));
  Durable(Msg(2, 20));  // evicts 1 and the tick: horizon 1, so "after 1" is still covered
  EXPECT_THAT(Offsets(Drain(*s)), ::testing::ElementsAre(2));
  EXPECT_EQ(s->catchup_opens(), 0);
  EXPECT_EQ(s->tailing_switches(), 2);
}

TEST_F(SwitchableScannerTest, TailingDropsOtherVchannelsLikeCatchup) {
  Durable(Msg(1, 10, "kf-dml_0_1v0"), /*to_buffer=*/false);
  Durable(Msg(2, 20, "kf-dml_0_2v0"), /*to_buffer=*/false);
  Durable(Msg(3, 30, "kf-dml_0_1v0"));
  Durable(Msg(4, 40, "kf-dml_0_2v0"));
  Durable(Tick(5, 50));
  Durable(Msg(6, 60, "kf-dml_0_1v0"));
  auto s = NewScanner(Id(1), false, "kf-dml_0_1v0");
  std::vector<Read> reads = Drain(*s);
  EXPECT_THAT(Offsets(reads), ::testing::ElementsAre(1, 3, 5, 6));
  EXPECT_EQ(reads[0].mode, ScanMode::kCatchup);
  EXPECT_EQ(reads.back().mode, ScanMode::kTailing);
}

TEST_F(SwitchableScannerTest, CatchupFactoryErrorIsReturnedAndRetried) {
  Durable(Msg(1, 10), /*to_buffer=*/false);
  auto s = NewScanner(Id(1));
  factory_error_ = absl::UnavailableError("backend down");
  EXPECT_EQ(s->Next(trace::Context(), kPast).status().code(), absl::StatusCode::kUnavailable);
  factory_error_ = absl::OkStatus();
  EXPECT_THAT(Offsets(Drain(*s)), ::testing::ElementsAre(1));
  EXPECT_EQ(catchup_starts_.size(), 2u);
}

TEST_F(SwitchableScannerTest, BufferCloseIsReturnedWhileTailing) {
  Durable(Msg(1, 10));
  auto s = NewScanner(Id(1));
  ASSERT_EQ(Drain(*s).size(), 1u);
  buffer_->Close();
  EXPECT_EQ(s->Next(trace::Context(), kPast).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kf::wal
