// RecoverWal (recovery.h) as a unit: a log written through the adaptor (DDL with broadcast
// headers, `_ik` appends, a transaction) read back by RecoverWal over the memory backend, with
// the whole log as its tail and with a tail that starts later.
#include "wal/recovery.h"

#include <unistd.h>

#include <memory>
#include <string>

#include "common/errors.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "message/builders.h"
#include "storage/tso/timestamp_allocator.h"
#include "wal/collections/test_messages.h"
#include "wal/testing/memory_backend.h"
#include "wal/wal_impl.h"

namespace kf::wal {
namespace {

using State = CollectionTable::State;
using testing::MemoryWalBackend;

constexpr char kPchannel[] = "kf-dml_0";
constexpr char kVc[] = "kf-dml_0_42v1";
constexpr char kOther[] = "kf-dml_0_43v1";

// The memory backend with the recovery tail starting at a chosen entry.
class TailAt final : public WalBackend {
 public:
  TailAt(std::unique_ptr<MemoryWalBackend> inner, MessageId tail)
      : inner_(std::move(inner)), tail_(tail) {}
  std::string_view pchannel() const override { return inner_->pchannel(); }
  Term term() const override { return inner_->term(); }
  absl::StatusOr<MessageId> Append(std::string data, AppendCallback done) override {
    return inner_->Append(std::move(data), std::move(done));
  }
  absl::StatusOr<std::unique_ptr<BackendScanner>> Read(const ReadOptions& o) override {
    return inner_->Read(o);
  }
  MessageId NextId() const override { return inner_->NextId(); }
  absl::StatusOr<MessageId> TailStart(uint64_t) override { return tail_; }
  absl::Status Truncate(const MessageId& id) override { return inner_->Truncate(id); }
  absl::Status Close() override { return inner_->Close(); }

 private:
  std::unique_ptr<MemoryWalBackend> inner_;
  const MessageId tail_;
};

MutableMessage WithKey(MutableMessage m, const std::string& ik) {
  m.set_idempotency_key(ik);
  return m;
}

class RecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tso_ = *TimestampAllocator::Open(dir_.path() + "/tso", {});
    log_ = std::make_unique<MemoryWalBackend>(kPchannel);
  }

  // Writes the log through the adaptor (no ticker: nothing but these entries).
  void Write() {
    WalImpl wal({.pchannel = kPchannel, .tso = tso_.get()}, log_->Reopen(Term(1)));
    ASSERT_TRUE(wal.Recover().ok());
    auto append = [&](MutableMessage m) {
      auto r = wal.AppendSync({}, std::move(m));
      EXPECT_TRUE(r.ok()) << r.status();
      return r.ok() ? *r : AppendResult{};
    };
    create_ = append(testing::CreateCollection(kVc, 42, 4, /*broadcast_id=*/7));  // entry 0
    create_other_ = append(testing::CreateCollection(kOther, 43, 4, 8));          // 1
    insert_ = append(WithKey(testing::Insert(kVc, 4), "p:1"));                    // 2
    begin_ = append(WithKey(NewBeginTxnMessage(kVc, 10000), "p:2"));              // 3
    MutableMessage body = testing::Insert(kVc, 4);
    body.set_txn(*begin_.txn);
    append(std::move(body));  // 4
    commit_ = append(WithKey(NewCommitTxnMessage(kVc, TxnId(begin_.txn->txn_id())), "p:3"));
    drop_other_ = append(testing::DropCollection(kOther, 43, 9));  // 6
    wal.Close();
  }

  absl::StatusOr<RecoveredState> Recover(std::unique_ptr<WalBackend> backend) {
    return RecoverWal(*backend, {.pchannel = kPchannel});
  }

  kf::testing::TempDir dir_{"kf-walrecovery"};
  std::unique_ptr<TimestampAllocator> tso_;
  std::unique_ptr<MemoryWalBackend> log_;
  AppendResult create_, create_other_, insert_, begin_, commit_, drop_other_;
};

TEST_F(RecoveryTest, TheWholeLogAsTailGivesEveryPart) {
  Write();
  auto state = Recover(log_->Reopen(Term(2)));
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_TRUE(state->last_id.has_value());
  EXPECT_EQ(*state->last_id, drop_other_.id);
  EXPECT_EQ(state->last_timetick, drop_other_.timetick);
  EXPECT_EQ(state->collections.state(kVc), State::kCreated);
  EXPECT_EQ(state->collections.state(kOther), State::kDropped);
  // Broadcast results by {vchannel, broadcast id}.
  auto created = state->broadcasts->Completed({.producer = kVc, .sequence = 7});
  ASSERT_TRUE(created.has_value());
  EXPECT_EQ(created->id, create_.id);
  EXPECT_EQ(created->timetick, create_.timetick);
  auto dropped = state->broadcasts->Completed({.producer = kOther, .sequence = 9});
  ASSERT_TRUE(dropped.has_value());
  EXPECT_EQ(dropped->id, drop_other_.id);
  // `_ik` results, a txn's with its context and its LCMID.
  auto inserted = state->idempotency->Completed({.producer = "p", .sequence = 1});
  ASSERT_TRUE(inserted.has_value());
  EXPECT_EQ(inserted->id, insert_.id);
  EXPECT_EQ(inserted->timetick, insert_.timetick);
  auto begun = state->idempotency->Completed({.producer = "p", .sequence = 2});
  ASSERT_TRUE(begun.has_value());
  ASSERT_TRUE(begun->txn.has_value());
  EXPECT_EQ(begun->txn->txn_id(), begin_.txn->txn_id());
  auto committed = state->idempotency->Completed({.producer = "p", .sequence = 3});
  ASSERT_TRUE(committed.has_value());
  EXPECT_EQ(committed->id, commit_.id);
  EXPECT_EQ(committed->last_confirmed, commit_.last_confirmed);
  EXPECT_FALSE(state->idempotency->Completed({.producer = "p", .sequence = 4}).has_value());
}

TEST_F(RecoveryTest, BeforeTheTailOnlyDdlCounts) {
  Write();
  // The tail starts at the Begin (entry 3): the Insert's `_ik` and timetick are not recovered,
  // every DDL is.
  auto state = Recover(std::make_unique<TailAt>(log_->Reopen(Term(2)), begin_.id));
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(*state->last_id, drop_other_.id);
  EXPECT_EQ(state->last_timetick, drop_other_.timetick);
  EXPECT_EQ(state->collections.state(kVc), State::kCreated);
  EXPECT_EQ(state->collections.state(kOther), State::kDropped);
  EXPECT_TRUE(state->broadcasts->Completed({.producer = kVc, .sequence = 7}).has_value());
  EXPECT_FALSE(state->idempotency->Completed({.producer = "p", .sequence = 1}).has_value());
  EXPECT_TRUE(state->idempotency->Completed({.producer = "p", .sequence = 2}).has_value());
  // A tail past the last entry: no timetick, only DDL.
  auto past = Recover(std::make_unique<TailAt>(log_->Reopen(Term(3)), MessageId::Local(100)));
  ASSERT_TRUE(past.ok()) << past.status();
  EXPECT_EQ(past->last_timetick, TimeTick(0));
  EXPECT_EQ(*past->last_id, drop_other_.id);
  EXPECT_EQ(past->collections.state(kOther), State::kDropped);
  EXPECT_FALSE(past->idempotency->Completed({.producer = "p", .sequence = 3}).has_value());
}

TEST_F(RecoveryTest, AnEmptyLogAndAnUndecodableEntry) {
  auto empty = Recover(log_->Reopen(Term(1)));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_FALSE(empty->last_id.has_value());
  EXPECT_EQ(empty->last_timetick, TimeTick(0));
  EXPECT_EQ(empty->collections.size(), 0u);

  auto backend = log_->Reopen(Term(1));
  ASSERT_TRUE(backend->Append("\xff\xff\xff", [](absl::Status) {}).ok());
  auto broken = Recover(std::move(backend));
  EXPECT_EQ(GetStreamingCode(broken.status()), StreamingCode::kDataLoss) << broken.status();
}

}  // namespace
}  // namespace kf::wal
