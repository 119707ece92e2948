// The replicate rules through the WAL adaptor (docs/replication.md), over the memory and the
// local backend: a secondary takes only its primary's replicated messages and each once,
// switching exactly at the AlterReplicateConfig; a primary, or a cluster outside replication,
// refuses `_rh`; a reopened WAL rebuilds the role and the checkpoint from its log (decoding
// every entry past the tail's start on a secondary) or from a checkpoint of its state.
#include <unistd.h>

#include <filesystem>
#include <future>
#include <string>
#include <tuple>
#include <vector>

#include "common/errors.h"
#include "gtest/gtest.h"
#include "message/builders.h"
#include "storage/tso/timestamp_allocator.h"
#include "wal/backends/testing/backend_under_test.h"
#include "wal/collections/test_messages.h"
#include "wal/txn/txn_message.h"
#include "wal/wal_impl.h"

namespace kf::wal {
namespace {

using testing::BackendKind;
using testing::BackendUnderTest;

constexpr char kPchannel[] = "kf-dml_0";
constexpr char kRaw[] = "kf-dml_0_orders";

// "a" replicates to "b" (or, promoted, "b" to "a"); one pchannel each.
kingfisher::v1::ReplicateConfiguration Config(const std::string& primary,
                                              const std::string& secondary) {
  kingfisher::v1::ReplicateConfiguration c;
  for (const std::string& id : {primary, secondary}) {
    kingfisher::v1::ReplicateCluster* cluster = c.add_clusters();
    cluster->set_cluster_id(id);
    cluster->set_endpoint(id + ".example:19530");
    cluster->add_pchannels(kPchannel);
  }
  kingfisher::v1::ReplicateTopologyEdge* e = c.add_topology();
  e->set_source_cluster_id(primary);
  e->set_target_cluster_id(secondary);
  return c;
}

MutableMessage Alter(const kingfisher::v1::ReplicateConfiguration& c, uint64_t broadcast_id) {
  return testing::Broadcast(
      MutableMessage(MessageType::kAlterReplicateConfig, c.SerializeAsString()), broadcast_id);
}

MutableMessage UserWrite(const std::string& payload = "row") {
  MutableMessage m(MessageType::kInsert, payload);
  m.set_vchannel(kRaw);
  return m;
}

// A message as the replicate service appends it: `_rh` names its place in the source and the
// source timetick of the message replicated before it.
MutableMessage Replicated(MutableMessage m, uint64_t source_tt, uint64_t previous,
                          const std::string& from = "a") {
  kingfisher::v1::ReplicateHeader h;
  h.set_previous_time_tick(previous);
  h.set_cluster_id(from);
  h.set_message_id(MessageId(WalKind::kLocal, 0, source_tt).Encode());
  h.set_time_tick(source_tt);
  h.set_vchannel(std::string(m.vchannel()));
  m.set_replicate_header(h);
  return m;
}
MutableMessage Replicated(uint64_t source_tt, uint64_t previous, const std::string& from = "a") {
  return Replicated(UserWrite("r" + std::to_string(source_tt)), source_tt, previous, from);
}

MutableMessage InTxn(MutableMessage m, TxnId txn) {
  kingfisher::v1::TxnContext ctx;
  ctx.set_txn_id(txn.value());
  m.set_txn(ctx);
  return m;
}

StreamingCode CodeOf(const absl::StatusOr<AppendResult>& r) {
  return r.ok() ? StreamingCode::kOk : GetStreamingCode(r.status());
}

class WalReplicateTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = c == '/' ? '_' : c;
    dir_ = std::filesystem::temp_directory_path() /
           ("kf-walrepl-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    tso_ = *TimestampAllocator::Open((dir_ / "tso").string(), {});
    log_ = std::make_unique<BackendUnderTest>(GetParam(), dir_, kPchannel);
    Reopen();
  }
  void TearDown() override {
    if (wal_) wal_->Close();
    wal_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A restart of the pchannel's owner in cluster "b". The short default tail leaves most of
  // the log to the part of recovery that decodes only what it must.
  void Reopen(std::optional<kingfisher::v1::WalState> checkpoint = std::nullopt) {
    if (wal_) wal_->Close();
    wal_.reset();
    term_ = Term(term_.value() + 1);
    auto backend = log_->Open(term_);
    ASSERT_TRUE(backend.ok()) << backend.status();
    WalOptions options{
        .pchannel = kPchannel, .cluster_id = "b", .tso = tso_.get(), .recovery_scan_bytes = 64};
    if (checkpoint.has_value()) {
      options.load_checkpoint = [checkpoint](const std::string&) { return checkpoint; };
    }
    wal_ = std::make_unique<WalImpl>(std::move(options), *std::move(backend));
    ASSERT_TRUE(wal_->Recover().ok());
  }

  absl::StatusOr<AppendResult> Append(MutableMessage m) {
    return wal_->AppendSync({}, std::move(m));
  }

  // The source timeticks of the replicated messages in the log, and how many user writes.
  struct Contents {
    std::vector<uint64_t> replicated;
    int user = 0;
  };
  Contents Log() {
    auto scanner = *wal_->Read({});
    Contents out;
    for (;;) {
      auto m = scanner->Next({}, absl::Now() + absl::Milliseconds(100));
      if (!m.ok()) break;
      const MessageType t = (*m)->type();
      if (t == MessageType::kTimeTick || t == MessageType::kAlterReplicateConfig) continue;
      std::vector<ImmutableMessagePtr> all = {*m};
      if (t == MessageType::kTxn) all = AsTxnMessage(**m)->inner();
      for (const ImmutableMessagePtr& one : all) {
        if (auto h = one->message().replicate_header()) {
          out.replicated.push_back(h->time_tick());
        } else {
          ++out.user;
        }
      }
    }
    return out;
  }

  uint64_t CheckpointTimeTick() {
    kingfisher::v1::WalReplicateState s = wal_->replicate_state();
    for (const auto& c : s.checkpoints()) {
      if (c.cluster_id() == "a") return c.time_tick();
    }
    return 0;
  }

  std::filesystem::path dir_;
  std::unique_ptr<TimestampAllocator> tso_;
  std::unique_ptr<BackendUnderTest> log_;
  std::unique_ptr<WalImpl> wal_;
  Term term_{0};
};

TEST_P(WalReplicateTest, OutsideReplicationWritesPassAndReplicatedMessagesAreRefused) {
  EXPECT_TRUE(Append(UserWrite()).ok());
  auto r = Append(Replicated(10, 0));
  EXPECT_EQ(CodeOf(r), StreamingCode::kReplicateViolation) << r.status();
  EXPECT_NE(r.status().message().find("not a secondary"), std::string::npos) << r.status();
  EXPECT_EQ(Log().replicated.size(), 0u);
}

TEST_P(WalReplicateTest, APrimaryTakesWritesAndRefusesReplicatedMessages) {
  ASSERT_TRUE(Append(Alter(Config("b", "a"), 1)).ok());
  EXPECT_TRUE(Append(UserWrite()).ok());
  EXPECT_EQ(CodeOf(Append(Replicated(10, 0))), StreamingCode::kReplicateViolation);
  const Contents log = Log();
  EXPECT_EQ(log.user, 1);
  EXPECT_TRUE(log.replicated.empty());
}

TEST_P(WalReplicateTest, ASecondaryTakesOnlyItsPrimarysMessagesAndEachOnce) {
  EXPECT_TRUE(Append(UserWrite()).ok());  // before the configuration: an ordinary cluster
  ASSERT_TRUE(Append(Alter(Config("a", "b"), 1)).ok());
  auto user = Append(UserWrite());
  EXPECT_EQ(CodeOf(user), StreamingCode::kReplicateViolation);
  EXPECT_NE(user.status().message().find("secondary of cluster a (a.example:19530)"),
            std::string::npos)
      << user.status();
  EXPECT_EQ(CodeOf(Append(Replicated(10, 0, "c"))), StreamingCode::kReplicateViolation);
  EXPECT_TRUE(Append(Replicated(10, 0)).ok());
  EXPECT_EQ(CodeOf(Append(Replicated(10, 0))), StreamingCode::kIgnoredOperation);
  EXPECT_EQ(CodeOf(Append(Replicated(5, 0))), StreamingCode::kIgnoredOperation);
  // A gap: the message at 11 is missing, so the one after it must wait for it.
  auto gap = Append(Replicated(12, 11));
  EXPECT_EQ(CodeOf(gap), StreamingCode::kReplicateViolation);
  EXPECT_NE(gap.status().message().find("out of order"), std::string::npos) << gap.status();
  EXPECT_TRUE(Append(Replicated(11, 10)).ok());
  EXPECT_EQ(CheckpointTimeTick(), 11u);

  // In one batch the checkpoint moves from message to message.
  std::vector<std::future<absl::StatusOr<AppendResult>>> results;
  std::vector<AppendRequest> batch;
  for (auto [tt, previous] :
       std::vector<std::pair<uint64_t, uint64_t>>{{20, 11}, {20, 11}, {21, 20}, {19, 11}}) {
    auto done = std::make_shared<std::promise<absl::StatusOr<AppendResult>>>();
    results.push_back(done->get_future());
    batch.push_back({.msg = Replicated(tt, previous),
                     .done = [done](absl::StatusOr<AppendResult> r) { done->set_value(r); }});
  }
  wal_->AppendBatch(std::move(batch));
  std::vector<StreamingCode> codes;
  for (auto& f : results) codes.push_back(CodeOf(f.get()));
  EXPECT_EQ(codes,
            (std::vector<StreamingCode>{StreamingCode::kOk, StreamingCode::kIgnoredOperation,
                                        StreamingCode::kOk, StreamingCode::kIgnoredOperation}));
  const Contents log = Log();
  EXPECT_EQ(log.replicated, (std::vector<uint64_t>{10, 11, 20, 21}));
  EXPECT_EQ(log.user, 1);
  EXPECT_EQ(CheckpointTimeTick(), 21u);
}

TEST_P(WalReplicateTest, ASecondaryTakesItsOwnSealsButNoReplicatedConfiguration) {
  ASSERT_TRUE(Append(Alter(Config("a", "b"), 1)).ok());
  // The node's own CreateSegment (its follower seals growing segments) is not a user write.
  auto seal = Append(NewCreateSegmentMessage(kRaw, 42, "_default"));
  EXPECT_TRUE(seal.ok()) << seal.status();
  // Each cluster gets its own AlterReplicateConfig: a replicated one is refused.
  auto copied = Append(Replicated(Alter(Config("a", "b"), 2), 50, 0));
  EXPECT_EQ(CodeOf(copied), StreamingCode::kReplicateViolation) << copied.status();
}

TEST_P(WalReplicateTest, AReplicatedTransactionIsJudgedAtItsCommit) {
  ASSERT_TRUE(Append(Alter(Config("a", "b"), 1)).ok());
  ASSERT_TRUE(Append(Replicated(40, 0)).ok());
  // The source's txn began (30) before the message at 40 and committed after it (42): its
  // Begin and body are older than the checkpoint, its commit is not.
  auto txn_once = [&]() -> StreamingCode {
    auto begin = Append(Replicated(NewBeginTxnMessage(kRaw, 60'000), 30, 40));
    if (!begin.ok()) return CodeOf(begin);
    const TxnId id(begin->txn->txn_id());
    auto body = Append(Replicated(InTxn(UserWrite("body"), id), 31, 40));
    if (!body.ok()) return CodeOf(body);
    return CodeOf(Append(Replicated(NewCommitTxnMessage(kRaw, id), 42, 40)));
  };
  EXPECT_EQ(txn_once(), StreamingCode::kOk);
  EXPECT_EQ(CheckpointTimeTick(), 42u);
  EXPECT_EQ(txn_once(), StreamingCode::kIgnoredOperation);  // a replicator's retry
  EXPECT_EQ(Log().replicated, (std::vector<uint64_t>{40, 30, 31, 42}));
}

TEST_P(WalReplicateTest, AReopenedSecondaryKnowsItsRoleAndCheckpointFromItsLog) {
  ASSERT_TRUE(Append(Alter(Config("a", "b"), 1)).ok());
  for (uint64_t tt = 10; tt < 20; ++tt)
    ASSERT_TRUE(Append(Replicated(tt, tt == 10 ? 0 : tt - 1)).ok());
  // Then a replicated txn that never commits: the local backend's tail holds only its last
  // bodies (the memory backend's is the whole log), and none moves the checkpoint.
  auto begin = Append(Replicated(NewBeginTxnMessage(kRaw, 60'000), 100, 19));
  ASSERT_TRUE(begin.ok());
  for (uint64_t tt = 101; tt < 110; ++tt) {
    const TxnId txn(begin->txn->txn_id());
    ASSERT_TRUE(Append(Replicated(InTxn(UserWrite(std::string(16 << 10, 'x')), txn), tt, 19)).ok());
  }
  Reopen();
  EXPECT_EQ(CheckpointTimeTick(), 19u);
  EXPECT_EQ(CodeOf(Append(Replicated(19, 18))), StreamingCode::kIgnoredOperation);
  EXPECT_EQ(CodeOf(Append(UserWrite())), StreamingCode::kReplicateViolation);
  EXPECT_TRUE(Append(Replicated(20, 19)).ok());

  // Promoted: the same pchannel now takes writes and refuses what "a" still sends.
  ASSERT_TRUE(Append(Alter(Config("b", "a"), 2)).ok());
  EXPECT_TRUE(Append(UserWrite()).ok());
  EXPECT_EQ(CodeOf(Append(Replicated(21, 20))), StreamingCode::kReplicateViolation);
  Reopen();
  EXPECT_TRUE(Append(UserWrite()).ok());
  EXPECT_EQ(CodeOf(Append(Replicated(21, 20))), StreamingCode::kReplicateViolation);
  EXPECT_EQ(Log().replicated.size(), 11u);  // the txn never committed: not delivered
}

TEST_P(WalReplicateTest, TheAlterThatDropsAnEdgeIsRecordedForTheHandoverAcrossReopens) {
  ASSERT_TRUE(Append(Alter(Config("b", "a"), 1)).ok());  // "b" (this WAL) is the primary
  EXPECT_EQ(wal_->replicate_state().handovers_size(), 0);
  ASSERT_TRUE(Append(UserWrite()).ok());
  auto dropped = Append(Alter(Config("a", "b"), 2));  // switched over: the edge b -> a is gone
  ASSERT_TRUE(dropped.ok());
  ASSERT_TRUE(Append(Alter(Config("a", "b"), 3)).ok());  // the same again: still that one
  for (int reopened = 0; reopened < 2; ++reopened) {
    const kingfisher::v1::WalReplicateState state = wal_->replicate_state();
    ASSERT_EQ(state.handovers_size(), 1) << reopened;
    EXPECT_EQ(state.handovers(0).target_cluster_id(), "a");
    EXPECT_EQ(state.handovers(0).time_tick(), dropped->timetick.value());
    EXPECT_EQ(RoleOf(state.handovers(0).config(), "b").kind, ReplicateRole::Kind::kPrimary);
    Reopen();
  }
  ASSERT_TRUE(Append(Alter(Config("b", "a"), 4)).ok());  // the edge is back: nothing to hand over
  EXPECT_EQ(wal_->replicate_state().handovers_size(), 0);
}

TEST(ReplicateStateTest, TheHandoverRecordIsKeptInTheCheckpointOfTheState) {
  ReplicateState state("b");
  for (auto [primary, secondary, tt] :
       {std::tuple{"b", "a", 5}, std::tuple{"a", "b", 9}, std::tuple{"a", "b", 12}}) {
    state.Apply({.type = MessageType::kAlterReplicateConfig,
                 .config = std::make_shared<kingfisher::v1::ReplicateConfiguration>(
                     Config(primary, secondary)),
                 .time_tick = static_cast<uint64_t>(tt)});
  }
  kingfisher::v1::WalState saved;
  state.SaveTo(&saved);
  ReplicateState loaded("b");
  loaded.LoadFrom(saved);
  ASSERT_EQ(loaded.handovers().size(), 1u);
  EXPECT_EQ(loaded.handovers().at("a").time_tick(), 9u);
  EXPECT_EQ(RoleOf(loaded.handovers().at("a").config(), "b").kind, ReplicateRole::Kind::kPrimary);
  EXPECT_TRUE(loaded.secondary());
}

TEST_P(WalReplicateTest, TruncationKeepsWhatASecondaryStillHasToRead) {
  std::vector<MessageId> ids;
  for (int i = 0; i < 10; ++i) {
    auto r = Append(UserWrite());
    ASSERT_TRUE(r.ok());
    ids.push_back(r->id);
  }
  auto truncated = wal_->TruncateBefore(ids[8]);  // no replication: as asked
  ASSERT_TRUE(truncated.ok()) << truncated.status();
  EXPECT_EQ(*truncated, ids[8]);

  ASSERT_TRUE(Append(Alter(Config("b", "a"), 1)).ok());  // this WAL ("b") replicates to "a"
  for (int i = 0; i < 10; ++i) {
    auto r = Append(UserWrite());
    ASSERT_TRUE(r.ok());
    ids.push_back(r->id);
  }
  EXPECT_EQ(*wal_->TruncateBefore(ids[15]), MessageId());  // nobody reported on "a": all held
  wal_->HoldForReplication("a", ids[12]);
  EXPECT_EQ(*wal_->TruncateBefore(ids[15]), ids[12]);  // its replicator resumes at 12
  EXPECT_EQ(*wal_->TruncateBefore(ids[11]), ids[11]);
  wal_->HoldForReplication("a", MessageId());  // from the start
  EXPECT_EQ(*wal_->TruncateBefore(ids[15]), MessageId());
  wal_->HoldForReplication("a", std::nullopt);  // released
  EXPECT_EQ(*wal_->TruncateBefore(ids[15]), ids[15]);
}

TEST_P(WalReplicateTest, MessagesAfterCountsWhatBecameDurableSinceTheOpen) {
  std::vector<TimeTick> at;
  for (int i = 0; i < 40; ++i) {
    auto r = Append(UserWrite());
    ASSERT_TRUE(r.ok());
    at.push_back(r->timetick);
  }
  for (int i : {0, 9, 23, 38}) {
    std::optional<uint64_t> n = wal_->MessagesAfter(at[i]);
    ASSERT_TRUE(n.has_value()) << i;
    const uint64_t exact = 39 - i;
    EXPECT_GE(*n, exact) << i;
    EXPECT_LT(*n, exact + 16) << i;
  }
  EXPECT_EQ(wal_->MessagesAfter(at.back()), 0u);
  Reopen();  // counted from the open on: what came before is unknown
  EXPECT_EQ(wal_->MessagesAfter(at[9]), std::nullopt);
  EXPECT_EQ(wal_->MessagesAfter(at.back()), 0u);
  ASSERT_TRUE(Append(UserWrite()).ok());
  EXPECT_EQ(wal_->MessagesAfter(at.back()), 1u);
}

TEST_P(WalReplicateTest, AReopenedSecondaryStartsFromACheckpointOfItsState) {
  ASSERT_TRUE(Append(Alter(Config("a", "b"), 1)).ok());
  ASSERT_TRUE(Append(Replicated(10, 0)).ok());
  auto at = Append(Replicated(11, 10));
  ASSERT_TRUE(at.ok());
  ASSERT_TRUE(Append(Replicated(12, 11)).ok());
  // The state as of the message at 11, as the query follower would have saved it.
  kingfisher::v1::WalState state;
  state.set_after_id(at->id.Encode());
  state.set_after_timetick(at->timetick.value());
  ReplicateState copy("b");
  copy.Apply(
      {.type = MessageType::kAlterReplicateConfig,
       .config = std::make_shared<kingfisher::v1::ReplicateConfiguration>(Config("a", "b"))});
  ReplicateAppend eleven;
  ASSERT_TRUE(ReplicateState::Prepare(Replicated(11, 10), &eleven).ok());
  copy.Apply(eleven);
  copy.SaveTo(&state);
  Reopen(state);
  EXPECT_EQ(CheckpointTimeTick(), 12u);
  EXPECT_EQ(CodeOf(Append(Replicated(12, 11))), StreamingCode::kIgnoredOperation);
  EXPECT_EQ(CodeOf(Append(UserWrite())), StreamingCode::kReplicateViolation);
  EXPECT_TRUE(Append(Replicated(13, 12)).ok());
}

TEST_P(WalReplicateTest, AMalformedReplicateHeaderOrConfigurationIsRefused) {
  MutableMessage bad = UserWrite();
  bad.SetProperty(std::string(prop::kReplicate), "!!not base64!!");
  EXPECT_EQ(CodeOf(Append(std::move(bad))), StreamingCode::kInvalidArgument);
  kingfisher::v1::ReplicateConfiguration cycle = Config("a", "b");
  cycle.mutable_topology(0)->set_target_cluster_id("a");
  EXPECT_EQ(CodeOf(Append(Alter(cycle, 1))), StreamingCode::kInvalidArgument);
  EXPECT_EQ(wal_->replicate_state().config().clusters_size(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, WalReplicateTest,
                         ::testing::Values(BackendKind::kMemory, BackendKind::kLocal),
                         [](const auto& info) { return testing::BackendName(info.param); });

}  // namespace
}  // namespace kf::wal
