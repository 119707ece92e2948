#include "wal/buffer/write_ahead_buffer.h"

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "wal/buffer/buffer_test_util.h"

namespace kf::wal {
namespace {

using ::kf::wal::testing::FakeClock;
using ::kf::wal::testing::Id;
using ::kf::wal::testing::Msg;
using ::kf::wal::testing::NpTick;

// A deadline that has passed: Next returns what is buffered, or DEADLINE_EXCEEDED at once.
const absl::Time kPast = absl::InfinitePast();
absl::Time Soon() { return absl::Now() + absl::Seconds(30); }

std::vector<uint64_t> DrainOffsets(TailingReader& r) {
  std::vector<uint64_t> out;
  for (;;) {
    auto m = r.Next(kPast);
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), absl::StatusCode::kDeadlineExceeded) << m.status();
      return out;
    }
    out.push_back((*m)->id().entry());
  }
}

TEST(WriteAheadBufferTest, ReadersSeeWalOrderFromAndAfterAPosition) {
  auto buffer = WriteAheadBuffer::Create();
  for (uint64_t i = 1; i <= 5; ++i) ASSERT_TRUE(buffer->Append(Msg(i, 10 * i)).ok());

  auto from = buffer->ReadFrom(Id(3));
  ASSERT_TRUE(from.ok()) << from.status();
  EXPECT_THAT(DrainOffsets(**from), ::testing::ElementsAre(3, 4, 5));
  auto after = buffer->ReadAfter(Id(3));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_THAT(DrainOffsets(**after), ::testing::ElementsAre(4, 5));

  // The reader stays usable after DEADLINE_EXCEEDED.
  ASSERT_TRUE(buffer->Append(Msg(6, 60)).ok());
  EXPECT_THAT(DrainOffsets(**from), ::testing::ElementsAre(6));
}

TEST(WriteAheadBufferTest, RejectsOutOfOrderAppendsAndChangesNothing) {
  auto buffer = WriteAheadBuffer::Create();
  ASSERT_TRUE(buffer->Append(Msg(5, 50)).ok());
  EXPECT_EQ(buffer->Append(Msg(5, 51)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(buffer->Append(Msg(4, 52)).code(), absl::StatusCode::kFailedPrecondition);
  // A non-persisted tick may repeat the last id, but never go back in id or timetick.
  EXPECT_EQ(buffer->Append(NpTick(4, 60)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(buffer->Append(NpTick(5, 50)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(buffer->num_entries(), 1u);
  EXPECT_TRUE(buffer->Append(NpTick(5, 55)).ok());
  EXPECT_TRUE(buffer->Append(Msg(6, 60)).ok());
  EXPECT_EQ(buffer->num_entries(), 3u);
}

TEST(WriteAheadBufferTest, NonPersistedTicksFollowThePersistedMessageWhoseIdTheyCarry) {
  auto buffer = WriteAheadBuffer::Create();
  ASSERT_TRUE(buffer->Append(Msg(1, 10)).ok());
  ASSERT_TRUE(buffer->Append(NpTick(1, 11)).ok());
  ASSERT_TRUE(buffer->Append(NpTick(1, 12)).ok());
  ASSERT_TRUE(buffer->Append(Msg(2, 13)).ok());

  auto timeticks = [](TailingReader& r) {
    std::vector<uint64_t> out;
    for (auto m = r.Next(kPast); m.ok(); m = r.Next(kPast)) out.push_back((*m)->timetick().value());
    return out;
  };
  auto from = buffer->ReadFrom(Id(1));
  ASSERT_TRUE(from.ok());
  EXPECT_THAT(timeticks(**from), ::testing::ElementsAre(10, 11, 12, 13));
  auto after = buffer->ReadAfter(Id(1));
  ASSERT_TRUE(after.ok());
  EXPECT_THAT(timeticks(**after), ::testing::ElementsAre(11, 12, 13));
}

TEST(WriteAheadBufferTest, FirstNonPersistedTickTellsWhereTheBufferStarts) {
  auto buffer = WriteAheadBuffer::Create();
  EXPECT_EQ(buffer->ReadAfter(Id(7)).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(buffer->Append(NpTick(7, 70)).ok());
  EXPECT_EQ(buffer->horizon(), Id(7));
  // Message 7 itself was never here; everything after it will be.
  EXPECT_EQ(buffer->ReadFrom(Id(7)).status().code(), absl::StatusCode::kNotFound);
  auto after = buffer->ReadAfter(Id(7));
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_TRUE(buffer->Append(Msg(8, 80)).ok());
  EXPECT_THAT(DrainOffsets(**after), ::testing::ElementsAre(7, 8));  // the tick, then 8
}

TEST(WriteAheadBufferTest, BeforeTheFirstAppendNothingIsCovered) {
  auto buffer = WriteAheadBuffer::Create();
  ASSERT_TRUE(buffer->Append(Msg(10, 100)).ok());
  // Whether something lies between 9 and 10 is unknown to the buffer.
  EXPECT_EQ(buffer->ReadFrom(Id(9)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(buffer->ReadAfter(Id(9)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(buffer->ReadFrom(Id(10)).ok());
}

TEST(WriteAheadBufferTest, KnownStartCoversThePositionAfterIt) {
  auto buffer = WriteAheadBuffer::Create({.starts_after = Id(9)});
  auto after = buffer->ReadAfter(Id(9));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(buffer->ReadAfter(Id(8)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(buffer->Append(Msg(9, 90)).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(buffer->Append(Msg(10, 100)).ok());
  EXPECT_THAT(DrainOffsets(**after), ::testing::ElementsAre(10));
}

TEST(WriteAheadBufferTest, EvictsFromTheHeadByBytes) {
  const size_t one = Msg(1, 10)->message().EncodedSize();
  auto buffer = WriteAheadBuffer::Create({.capacity_bytes = 3 * one});
  for (uint64_t i = 1; i <= 5; ++i) ASSERT_TRUE(buffer->Append(Msg(i, 10 + i)).ok());
  EXPECT_EQ(buffer->num_entries(), 3u);
  EXPECT_EQ(buffer->size_bytes(), 3 * one);
  EXPECT_EQ(buffer->horizon(), Id(2));
  EXPECT_EQ(buffer->ReadFrom(Id(2)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(buffer->ReadAfter(Id(1)).status().code(), absl::StatusCode::kNotFound);
  auto after = buffer->ReadAfter(Id(2));
  ASSERT_TRUE(after.ok());
  EXPECT_THAT(DrainOffsets(**after), ::testing::ElementsAre(3, 4, 5));
}

TEST(WriteAheadBufferTest, EntriesEveryReaderReturnedAreKeptOnlyUpToPassedBytes) {
  const size_t one = Msg(1, 10)->message().EncodedSize();
  // Room for two entries (their sizes differ by a few bytes).
  auto buffer =
      WriteAheadBuffer::Create({.capacity_bytes = 100 * one, .passed_bytes = 2 * one + one / 2});
  // No reader: nothing is still needed, so only the last two stay.
  for (uint64_t i = 1; i <= 4; ++i) ASSERT_TRUE(buffer->Append(Msg(i, 10 * i)).ok());
  EXPECT_EQ(buffer->num_entries(), 2u);
  EXPECT_EQ(buffer->horizon(), Id(2));

  auto fast = buffer->ReadAfter(Id(4));
  auto slow = buffer->ReadAfter(Id(4));
  ASSERT_TRUE(fast.ok() && slow.ok());
  for (uint64_t i = 5; i <= 8; ++i) ASSERT_TRUE(buffer->Append(Msg(i, 10 * i)).ok());
  EXPECT_THAT(DrainOffsets(**fast), ::testing::ElementsAre(5, 6, 7, 8));
  // 3 and 4 were returned to nobody open now; 5 on is still needed by `slow`, up to capacity.
  ASSERT_TRUE(buffer->Append(Msg(9, 90)).ok());
  EXPECT_EQ(buffer->horizon(), Id(4));
  EXPECT_EQ(buffer->num_entries(), 5u);

  // Once the slow reader has them too, the next append evicts down to passed_bytes.
  EXPECT_THAT(DrainOffsets(**slow), ::testing::ElementsAre(5, 6, 7, 8, 9));
  ASSERT_TRUE(buffer->Append(Msg(10, 100)).ok());
  EXPECT_EQ(buffer->num_entries(), 2u);
  EXPECT_EQ(buffer->horizon(), Id(8));
  // A reader opened just behind the tail is still served from memory.
  auto late = buffer->ReadAfter(Id(8));
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_THAT(DrainOffsets(**late), ::testing::ElementsAre(9, 10));

  // A closed reader holds nothing back.
  slow->reset();
  fast->reset();
  late->reset();
  auto stuck = buffer->ReadAfter(Id(10));
  ASSERT_TRUE(stuck.ok());
  stuck->reset();
  for (uint64_t i = 11; i <= 14; ++i) ASSERT_TRUE(buffer->Append(Msg(i, 10 * i)).ok());
  EXPECT_EQ(buffer->num_entries(), 2u);
}

TEST(WriteAheadBufferTest, MessageLargerThanTheCapacityIsNotRetained) {
  auto buffer = WriteAheadBuffer::Create({.capacity_bytes = 1000});
  ASSERT_TRUE(buffer->Append(Msg(1, 10)).ok());
  auto reader = buffer->ReadAfter(Id(1));
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(buffer->Append(Msg(2, 20, "", std::nullopt, /*pad=*/2000)).ok());
  EXPECT_EQ(buffer->num_entries(), 0u);
  EXPECT_EQ(buffer->size_bytes(), 0u);
  EXPECT_TRUE(IsEvictedError((*reader)->Next(kPast).status()));
}

TEST(WriteAheadBufferTest, EvictsByKeepaliveOnTheInjectedClock) {
  FakeClock clock;
  auto buffer = WriteAheadBuffer::Create(
      {.keepalive = absl::Seconds(30), .clock = [&clock] { return clock.Now(); }});
  ASSERT_TRUE(buffer->Append(Msg(1, 10)).ok());
  clock.Advance(absl::Seconds(20));
  ASSERT_TRUE(buffer->Append(Msg(2, 20)).ok());
  clock.Advance(absl::Seconds(9));
  buffer->EvictExpired();
  EXPECT_EQ(buffer->num_entries(), 2u);
  clock.Advance(absl::Seconds(1));  // message 1 is now 30 s old
  buffer->EvictExpired();
  EXPECT_EQ(buffer->num_entries(), 1u);
  EXPECT_EQ(buffer->horizon(), Id(1));
  clock.Advance(absl::Seconds(20));
  ASSERT_TRUE(buffer->Append(Msg(3, 30)).ok());  // Append evicts message 2 too
  EXPECT_EQ(buffer->num_entries(), 1u);
  EXPECT_EQ(buffer->horizon(), Id(2));
  EXPECT_EQ(buffer->ReadFrom(Id(2)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(buffer->ReadFrom(Id(3)).ok());
}

TEST(WriteAheadBufferTest, LaggingReaderGetsEvictedErrorInsteadOfBlockingTheWriter) {
  const size_t one = Msg(1, 10)->message().EncodedSize();
  auto buffer = WriteAheadBuffer::Create({.capacity_bytes = 2 * one});
  ASSERT_TRUE(buffer->Append(Msg(1, 10)).ok());
  auto slow = buffer->ReadFrom(Id(1));
  ASSERT_TRUE(slow.ok());
  auto first = (*slow)->Next(kPast);
  ASSERT_TRUE(first.ok());
  // The writer never waits: it keeps appending and memory stays bounded.
  for (uint64_t i = 2; i <= 10; ++i) ASSERT_TRUE(buffer->Append(Msg(i, 10 * i)).ok());
  EXPECT_LE(buffer->size_bytes(), 2 * one);
  absl::Status st = (*slow)->Next(Soon()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange) << st;
  EXPECT_TRUE(IsEvictedError(st));
  EXPECT_FALSE(IsEvictedError(absl::OutOfRangeError("something else")));
}

TEST(WriteAheadBufferTest, BufferOfAnEmptyLogCoversFromTheBeginning) {
  auto buffer = WriteAheadBuffer::Create({.starts_after = MessageId()});
  auto reader = buffer->ReadFrom(MessageId());
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_TRUE(buffer->Append(Msg(1, 10)).ok());
  ASSERT_TRUE(buffer->Append(Msg(2, 20)).ok());
  EXPECT_THAT(DrainOffsets(**reader), ::testing::ElementsAre(1, 2));
}

TEST(WriteAheadBufferTest, SkipDropsEverythingAndCoversOnlyWhatFollows) {
  auto buffer = WriteAheadBuffer::Create();
  ASSERT_TRUE(buffer->Append(Msg(1, 10)).ok());
  ASSERT_TRUE(buffer->Append(Msg(2, 20)).ok());
  auto waiting = buffer->ReadAfter(Id(2));  // caught up, waiting for 3
  ASSERT_TRUE(waiting.ok());
  // 3..5 became durable while nothing was retained.
  buffer->Skip(Id(5), TimeTick(50));
  EXPECT_EQ(buffer->num_entries(), 0u);
  EXPECT_EQ(buffer->size_bytes(), 0u);
  ASSERT_TRUE(buffer->Append(Msg(6, 60)).ok());
  // The waiting reader must not jump over 3..5: it falls back to catch-up.
  EXPECT_TRUE(IsEvictedError((*waiting)->Next(Soon()).status()));
  EXPECT_EQ(buffer->ReadAfter(Id(4)).status().code(), absl::StatusCode::kNotFound);
  auto after = buffer->ReadAfter(Id(5));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_THAT(DrainOffsets(**after), ::testing::ElementsAre(6));
  // Appends below the skipped position stay out-of-order errors.
  EXPECT_EQ(buffer->Append(Msg(5, 55)).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(WriteAheadBufferTest, ReaderOpenedBeyondTheTailSkipsLateAppendsBelowItsStart) {
  auto buffer = WriteAheadBuffer::Create();
  ASSERT_TRUE(buffer->Append(Msg(1, 10)).ok());
  // A catch-up reader may have read 3 from the backend before the adaptor appended 2 and 3.
  auto reader = buffer->ReadAfter(Id(3));
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_TRUE(buffer->Append(Msg(2, 20)).ok());
  ASSERT_TRUE(buffer->Append(Msg(3, 30)).ok());
  ASSERT_TRUE(buffer->Append(NpTick(3, 35)).ok());
  ASSERT_TRUE(buffer->Append(Msg(4, 40)).ok());
  EXPECT_THAT(DrainOffsets(**reader), ::testing::ElementsAre(3, 4));  // the tick, then 4
}

TEST(WriteAheadBufferTest, ConcurrentReadersShareTheSameMessageObjects) {
  constexpr int kReaders = 4;
  constexpr uint64_t kMessages = 200;
  auto buffer = WriteAheadBuffer::Create();
  ASSERT_TRUE(buffer->Append(Msg(1, 10)).ok());
  std::vector<ImmutableMessagePtr> appended = {nullptr};  // index = offset
  std::vector<std::vector<ImmutableMessagePtr>> seen(kReaders);
  std::vector<std::unique_ptr<TailingReader>> readers;
  for (int r = 0; r < kReaders; ++r) {
    auto reader = buffer->ReadAfter(Id(1));
    ASSERT_TRUE(reader.ok());
    readers.push_back(std::move(*reader));
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      while (seen[r].size() < kMessages) {
        auto m = readers[r]->Next(Soon());  // waits on the condvar for the writer
        if (!m.ok()) {
          ADD_FAILURE() << m.status();
          return;
        }
        seen[r].push_back(*m);
      }
    });
  }
  std::vector<ImmutableMessagePtr> written;
  for (uint64_t i = 2; i < 2 + kMessages; ++i) {
    written.push_back(Msg(i, 10 * i));
    ASSERT_TRUE(buffer->Append(written.back()).ok());
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kReaders; ++r) {
    ASSERT_EQ(seen[r].size(), kMessages);
    for (size_t i = 0; i < kMessages; ++i) {
      EXPECT_EQ(seen[r][i].get(), written[i].get()) << "reader " << r << " message " << i;
    }
  }
}

TEST(WriteAheadBufferTest, CloseWakesWaitingReadersAndRejectsAppends) {
  auto buffer = WriteAheadBuffer::Create();
  ASSERT_TRUE(buffer->Append(Msg(1, 10)).ok());
  auto reader = buffer->ReadAfter(Id(1));
  ASSERT_TRUE(reader.ok());
  absl::Status waited;
  std::thread t([&] { waited = (*reader)->Next(absl::InfiniteFuture()).status(); });
  buffer->Close();
  t.join();
  EXPECT_EQ(waited.code(), absl::StatusCode::kUnavailable) << waited;
  EXPECT_EQ(buffer->Append(Msg(2, 20)).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(buffer->ReadFrom(Id(1)).status().code(), absl::StatusCode::kUnavailable);
}

TEST(WriteAheadBufferTest, CloseForAReasonAnswersWithItAndTheFirstReasonStays) {
  auto buffer = WriteAheadBuffer::Create();
  ASSERT_TRUE(buffer->Append(Msg(1, 10)).ok());
  auto reader = buffer->ReadAfter(Id(1));
  ASSERT_TRUE(reader.ok());
  const absl::Status moved = absl::AbortedError("pchannel moved");
  buffer->Close(moved);
  buffer->Close();  // a later plain close does not replace the reason
  EXPECT_EQ((*reader)->Next(absl::InfiniteFuture()).status(), moved);
  EXPECT_EQ(buffer->Append(Msg(2, 20)), moved);
  EXPECT_EQ(buffer->ReadFrom(Id(1)).status(), moved);
}

TEST(WriteAheadBufferTest, ReaderKeepsTheBufferAlive) {
  auto buffer = WriteAheadBuffer::Create();
  ASSERT_TRUE(buffer->Append(Msg(1, 10)).ok());
  auto reader = buffer->ReadFrom(Id(1));
  ASSERT_TRUE(reader.ok());
  buffer.reset();
  auto m = (*reader)->Next(kPast);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->id(), Id(1));
}

TEST(WriteAheadBufferTest, WakeIsRegisteredOnlyWhenNextWouldWaitAndRunsOnceOnAppend) {
  auto buffer = WriteAheadBuffer::Create();
  ASSERT_TRUE(buffer->Append(Msg(1, 10)).ok());
  auto reader = buffer->ReadFrom(Id(1));
  ASSERT_TRUE(reader.ok());
  int wakes = 0;
  // An entry is readable: nothing registered.
  EXPECT_FALSE((*reader)->NotifyWhenReadable([&wakes] { ++wakes; }));
  EXPECT_THAT(DrainOffsets(**reader), ::testing::ElementsAre(1));
  ASSERT_TRUE((*reader)->NotifyWhenReadable([&wakes] { ++wakes; }));
  // Registering again replaces the first wake-up: one Append runs one.
  ASSERT_TRUE((*reader)->NotifyWhenReadable([&wakes] { wakes += 10; }));
  ASSERT_TRUE(buffer->Append(Msg(2, 20)).ok());
  EXPECT_EQ(wakes, 10);
  ASSERT_TRUE(buffer->Append(Msg(3, 30)).ok());  // one-shot
  EXPECT_EQ(wakes, 10);
  EXPECT_THAT(DrainOffsets(**reader), ::testing::ElementsAre(2, 3));
}

TEST(WriteAheadBufferTest, SkipAndCloseRunWakesAndNextThenDoesNotWait) {
  auto buffer = WriteAheadBuffer::Create();
  ASSERT_TRUE(buffer->Append(Msg(1, 10)).ok());
  auto reader = buffer->ReadAfter(Id(1));
  ASSERT_TRUE(reader.ok());
  int wakes = 0;
  ASSERT_TRUE((*reader)->NotifyWhenReadable([&wakes] { ++wakes; }));
  buffer->Skip(Id(2), TimeTick(20));
  EXPECT_EQ(wakes, 1);
  EXPECT_FALSE((*reader)->NotifyWhenReadable([&wakes] { ++wakes; }));
  EXPECT_TRUE(IsEvictedError((*reader)->Next(kPast).status()));

  auto after = buffer->ReadAfter(Id(2));
  ASSERT_TRUE(after.ok());
  ASSERT_TRUE((*after)->NotifyWhenReadable([&wakes] { ++wakes; }));
  buffer->Close();
  EXPECT_EQ(wakes, 2);
  EXPECT_FALSE((*after)->NotifyWhenReadable([&wakes] { ++wakes; }));
  EXPECT_EQ((*after)->Next(kPast).status().code(), absl::StatusCode::kUnavailable);
}

TEST(WriteAheadBufferTest, DestroyedReaderIsNotWoken) {
  auto buffer = WriteAheadBuffer::Create();
  ASSERT_TRUE(buffer->Append(Msg(1, 10)).ok());
  int wakes = 0;
  {
    auto reader = buffer->ReadAfter(Id(1));
    ASSERT_TRUE(reader.ok());
    ASSERT_TRUE((*reader)->NotifyWhenReadable([&wakes] { ++wakes; }));
  }
  ASSERT_TRUE(buffer->Append(Msg(2, 20)).ok());
  EXPECT_EQ(wakes, 0);
}

}  // namespace
}  // namespace kf::wal
