#include "streaming/node/streaming_node.h"

#include <atomic>
#include <filesystem>

#include "common/errors.h"
#include "common/testing/wait_until.h"
#include "gtest/gtest.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/tso/timestamp_allocator.h"
#include "wal/backends/local/local_opener.h"

namespace kf::streaming {
namespace {

using kingfisher::v1::PChannelAssignment;
using kingfisher::v1::PChannelState;

constexpr char kP0[] = "kf-dml_0";
constexpr char kP1[] = "kf-dml_1";

absl::Time Deadline() { return absl::Now() + absl::Seconds(10); }

// Reads `scanner` until it fails (its WAL's ticks come until the WAL closes): how it ended, or
// DEADLINE_EXCEEDED after Deadline().
absl::Status ReadUntilItEnds(wal::Scanner& scanner) {
  const absl::Time deadline = Deadline();
  for (;;) {
    auto next = scanner.Next(trace::Context(), deadline);
    if (!next.ok()) return next.status();
  }
}

MutableMessage Raw(std::string payload) {
  MutableMessage m(MessageType::kInsert, std::move(payload));
  m.set_vchannel("kf-dml_0_raw");
  return m;
}

// Wraps an opener; while `broken` is set, every append's durability callback fails (as a backend
// whose store is unreachable for too long), which breaks the WAL above it.
class BreakableOpener final : public wal::WalOpener {
 public:
  explicit BreakableOpener(std::unique_ptr<wal::WalOpener> base) : base_(std::move(base)) {}
  absl::StatusOr<std::unique_ptr<wal::WalBackend>> Open(const wal::OpenOptions& o) override {
    auto b = base_->Open(o);
    if (!b.ok()) return b.status();
    ++opens;
    return std::unique_ptr<wal::WalBackend>(std::make_unique<Backend>(*std::move(b), &broken));
  }
  WalKind kind() const override { return base_->kind(); }

  std::atomic<bool> broken{false};
  std::atomic<int> opens{0};

 private:
  class Backend final : public wal::WalBackend {
   public:
    Backend(std::unique_ptr<wal::WalBackend> base, std::atomic<bool>* broken)
        : base_(std::move(base)), broken_(broken) {}
    std::string_view pchannel() const override { return base_->pchannel(); }
    Term term() const override { return base_->term(); }
    absl::StatusOr<MessageId> Append(std::string data, wal::AppendCallback done) override {
      return base_->Append(std::move(data), [this, done = std::move(done)](absl::Status s) mutable {
        if (s.ok() && broken_->load()) s = absl::UnavailableError("injected: store unreachable");
        std::move(done)(s);
      });
    }
    absl::StatusOr<std::unique_ptr<wal::BackendScanner>> Read(
        const wal::ReadOptions& options) override {
      return base_->Read(options);
    }
    MessageId NextId() const override { return base_->NextId(); }
    absl::StatusOr<MessageId> TailStart(uint64_t bytes) override { return base_->TailStart(bytes); }
    absl::Status Truncate(const MessageId& id) override { return base_->Truncate(id); }
    absl::Status Close() override { return base_->Close(); }

   private:
    std::unique_ptr<wal::WalBackend> base_;
    std::atomic<bool>* broken_;
  };
  std::unique_ptr<wal::WalOpener> base_;
};

// Two nodes in one process over one metadata store and one shared WAL directory, each with its
// own opener (as separate processes would have); the test plays the coordinator.
class StreamingNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::path(::testing::TempDir()) /
            ("streaming_node_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "wal");
    auto store = meta::EmbeddedMetaStore::Open((root_ / "meta").string(), {});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    auto tso = TimestampAllocator::Open((root_ / "tso").string(), {});
    ASSERT_TRUE(tso.ok()) << tso.status();
    tso_ = *std::move(tso);
    for (auto& o : openers_) o = wal::local::NewLocalOpener({.root = (root_ / "wal").string()});
    auto breakable = std::make_unique<BreakableOpener>(std::move(openers_[0]));
    breakable_ = breakable.get();
    openers_[0] = std::move(breakable);
  }
  void TearDown() override {
    for (auto& n : nodes_) n.reset();
    for (auto& v : views_) v.reset();
    store_.reset();
    std::filesystem::remove_all(root_);
  }

  StreamingNode* StartNode(int id) {
    StreamingNode::Options o;
    o.node_id = id;
    o.address = "127.0.0.1:" + std::to_string(10000 + id);
    o.pchannels = {kP0, kP1};
    o.opener = openers_[id - 1].get();
    auto view = AssignmentView::Start(store_.get(), keys_, {}, Deadline());
    EXPECT_TRUE(view.ok()) << view.status();
    views_[id - 1] = *std::move(view);
    registries_[id - 1] =
        std::make_unique<streaming::node::DynamicWalRegistry>(std::vector<std::string>{kP0, kP1});
    o.view = views_[id - 1].get();
    o.registry = registries_[id - 1].get();
    o.wal.tso = tso_.get();
    o.lease_ttl = absl::Seconds(2);
    o.reconcile_interval = absl::Milliseconds(200);
    auto node = StreamingNode::Start(store_.get(), std::move(o), Deadline());
    EXPECT_TRUE(node.ok()) << node.status();
    nodes_[id - 1] = node.ok() ? *std::move(node) : nullptr;
    return nodes_[id - 1].get();
  }

  // The coordinator's move: {node, term, ASSIGNING}, as one write.
  void Assign(const std::string& pchannel, int64_t node, int64_t term) {
    PChannelAssignment a;
    a.set_pchannel(pchannel);
    a.set_node(node);
    a.set_term(term);
    a.set_state(kingfisher::v1::PCHANNEL_ASSIGNING);
    ASSERT_TRUE(store_->Put(keys_.pchannel(pchannel), a.SerializeAsString(), Deadline()).ok());
  }

  PChannelAssignment Read(const std::string& pchannel) {
    auto kv = store_->Get(keys_.pchannel(pchannel), Deadline());
    EXPECT_TRUE(kv.ok()) << kv.status();
    PChannelAssignment a;
    if (kv.ok()) a.ParseFromString(kv->kv.value);
    return a;
  }

  // Polls `done` (a cheap check of state the node publishes) until it holds or 10 s pass.
  template <typename F>
  bool Eventually(F done) {
    return kf::testing::WaitUntil(done, absl::Seconds(10));
  }

  bool Serves(int id, const std::string& pchannel, int64_t term) {
    auto w = registries_[id - 1]->Get(pchannel);
    return w.ok() && (*w)->term() == Term(term);
  }

  std::filesystem::path root_;
  ClusterKeys keys_{"kf"};
  std::unique_ptr<meta::EmbeddedMetaStore> store_;
  std::unique_ptr<TimestampAllocator> tso_;
  std::unique_ptr<wal::WalOpener> openers_[2];
  BreakableOpener* breakable_ = nullptr;  // node 1's opener
  std::unique_ptr<AssignmentView> views_[2];
  std::unique_ptr<streaming::node::DynamicWalRegistry> registries_[2];
  std::unique_ptr<StreamingNode> nodes_[2];
};

TEST_F(StreamingNodeTest, ABrokenWalIsReopenedAtTheSameTermAndAppendsResume) {
  StartNode(1);
  Assign(kP0, 1, 3);
  ASSERT_TRUE(Eventually([&] { return Serves(1, kP0, 3); }));
  auto wal = registries_[0]->Get(kP0);
  ASSERT_TRUE(wal.ok());
  ASSERT_TRUE((*wal)->AppendSync(trace::Context(), Raw("before")).ok());
  auto tail = (*wal)->Read(wal::ScanOptions{.policy = {.kind = wal::DeliverPolicy::Kind::kLatest}});
  ASSERT_TRUE(tail.ok()) << tail.status();
  const int opens = breakable_->opens.load();
  breakable_->broken = true;  // the store goes away: the append fails and breaks the WAL
  auto failed = (*wal)->AppendSync(trace::Context(), Raw("lost"));
  EXPECT_TRUE(absl::IsUnavailable(failed.status())) << failed.status();
  EXPECT_FALSE((*wal)->Health().ok());
  breakable_->broken = false;  // ... and comes back: the node reopens the WAL at term 3
  ASSERT_TRUE(Eventually([&] {
    auto w = registries_[0]->Get(kP0);
    return breakable_->opens.load() > opens && w.ok() && (*w)->Health().ok();
  }));
  auto reopened = registries_[0]->Get(kP0);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->term(), Term(3));
  auto after = (*reopened)->AppendSync(trace::Context(), Raw("after"));
  EXPECT_TRUE(after.ok()) << after.status();
  // The old WAL's readers end as at a restart, not with a routing error: the assignment did
  // not change, so a client waiting for a newer one would wait for nothing.
  const absl::Status ended = ReadUntilItEnds(**tail);
  EXPECT_EQ(GetStreamingCode(ended), StreamingCode::kOnShutdown) << ended;
}

TEST_F(StreamingNodeTest, OpensWhatIsAssignedAndConfirmsIt) {
  StreamingNode* n1 = StartNode(1);
  ASSERT_NE(n1, nullptr);
  Assign(kP0, 1, 1);
  ASSERT_TRUE(Eventually([&] { return Read(kP0).state() == kingfisher::v1::PCHANNEL_ASSIGNED; }));
  EXPECT_TRUE(Serves(1, kP0, 1));
  EXPECT_EQ(Read(kP0).term(), 1);
  // Not assigned here: CHANNEL_NOT_EXIST; not in the cluster: INVALID_ARGUMENT.
  EXPECT_EQ(GetStreamingCode(registries_[0]->Get(kP1).status()), StreamingCode::kChannelNotExist);
  EXPECT_EQ(registries_[0]->Get("kf-dml_9").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(StreamingNodeTest, WaitServingReturnsOnceOpenOrWithTheOpenError) {
  StreamingNode* n1 = StartNode(1);
  ASSERT_NE(n1, nullptr);
  EXPECT_TRUE(absl::IsDeadlineExceeded(n1->WaitServing(1, absl::Now() + absl::Milliseconds(50))));
  Assign(kP0, 1, 1);
  EXPECT_TRUE(n1->WaitServing(1, Deadline()).ok());

  // kP1's WAL is already fenced at term 5 (another writer): opening it at term 1 fails, and
  // the waiter gets that error instead of waiting out its deadline.
  auto fenced = openers_[1]->Open(wal::OpenOptions{.pchannel = kP1, .term = Term(5)});
  ASSERT_TRUE(fenced.ok()) << fenced.status();
  Assign(kP1, 1, 1);
  absl::Status s = n1->WaitServing(2, Deadline());
  EXPECT_EQ(GetStreamingCode(s), StreamingCode::kChannelFenced) << s;
  EXPECT_NE(s.message().find("open kf-dml_1 at term 1"), std::string::npos) << s;
}

TEST_F(StreamingNodeTest, MoveFencesTheOldOwnerAndKeepsItsData) {
  StartNode(1);
  StartNode(2);
  Assign(kP0, 1, 1);
  ASSERT_TRUE(Eventually([&] { return Serves(1, kP0, 1); }));
  auto old_wal = *registries_[0]->Get(kP0);
  auto acked = old_wal->AppendSync(trace::Context(), Raw("before the move"));
  ASSERT_TRUE(acked.ok()) << acked.status();

  Assign(kP0, 2, 2);
  ASSERT_TRUE(Eventually([&] { return Serves(2, kP0, 2); }));
  ASSERT_TRUE(Eventually([&] { return !registries_[0]->Get(kP0).ok(); }));
  EXPECT_EQ(GetStreamingCode(registries_[0]->Get(kP0).status()), StreamingCode::kChannelNotExist);
  // Whatever the old handle still does, it cannot append after the new owner opened.
  auto late = old_wal->AppendSync(trace::Context(), Raw("late"));
  EXPECT_FALSE(late.ok());

  // The new owner has the acknowledged message.
  auto new_wal = *registries_[1]->Get(kP0);
  wal::ScanOptions scan;
  auto scanner = new_wal->Read(scan);
  ASSERT_TRUE(scanner.ok()) << scanner.status();
  bool found = false;
  for (;;) {
    auto next = (*scanner)->Next(trace::Context(), absl::Now() + absl::Milliseconds(500));
    if (!next.ok()) break;
    if ((*next)->type() == MessageType::kInsert) {
      EXPECT_EQ((*next)->id(), acked->id);
      EXPECT_EQ((*next)->message().payload(), "before the move");
      found = true;
      break;
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(StreamingNodeTest, AnOwnerThatLostThePChannelRefusesWithARoutingError) {
  StartNode(1);
  StartNode(2);
  Assign(kP0, 1, 1);
  ASSERT_TRUE(Eventually([&] { return Serves(1, kP0, 1); }));
  auto old_wal = *registries_[0]->Get(kP0);
  auto tail =
      old_wal->Read(wal::ScanOptions{.policy = {.kind = wal::DeliverPolicy::Kind::kLatest}});
  ASSERT_TRUE(tail.ok()) << tail.status();
  // Not read before the close: it then reads the closed backend, whose readers end CANCELLED.
  auto from_start = old_wal->Read(wal::ScanOptions{});
  ASSERT_TRUE(from_start.ok()) << from_start.status();

  Assign(kP0, 2, 2);
  // The reader tailing the old owner's WAL ends when the node closes it...
  const absl::Status ended = ReadUntilItEnds(**tail);
  EXPECT_EQ(GetStreamingCode(ended), StreamingCode::kChannelNotExist) << ended;
  // ... and an append through the old handle is refused alike: the client waits for the new
  // assignment rather than trying this node again, as it would after ON_SHUTDOWN.
  auto late = old_wal->AppendSync(trace::Context(), Raw("late"));
  EXPECT_EQ(GetStreamingCode(late.status()), StreamingCode::kChannelNotExist) << late.status();
  // A reader of the closed backend gets the same, not CANCELLED (which would end a consumer).
  auto read = (*from_start)->Next(trace::Context(), Deadline());
  EXPECT_EQ(GetStreamingCode(read.status()), StreamingCode::kChannelNotExist) << read.status();
}

TEST_F(StreamingNodeTest, LostSessionClosesEverythingAndRegistersAgain) {
  StartNode(1);
  Assign(kP0, 1, 1);
  ASSERT_TRUE(Eventually([&] { return Serves(1, kP0, 1); }));
  auto node_kv = store_->Get(keys_.node(1), Deadline());
  ASSERT_TRUE(node_kv.ok());
  // The lease vanishes (as after a long pause): the node must stop serving, then come back.
  ASSERT_TRUE(store_->RevokeLease(node_kv->kv.lease, Deadline()).ok());
  ASSERT_TRUE(Eventually([&] {
    auto kv = store_->Get(keys_.node(1), Deadline());
    return kv.ok() && kv->kv.lease != node_kv->kv.lease;
  }));
  // Still assigned here at term 1 (no coordinator moved it): served again.
  ASSERT_TRUE(Eventually([&] { return Serves(1, kP0, 1); }));
}

TEST_F(StreamingNodeTest, DrainWaitsUntilEveryPChannelMovedAway) {
  StartNode(1);
  StartNode(2);
  Assign(kP0, 1, 1);
  Assign(kP1, 1, 1);
  ASSERT_TRUE(Eventually([&] { return Serves(1, kP0, 1) && Serves(1, kP1, 1); }));
  EXPECT_EQ(nodes_[0]->Drain(absl::Now() + absl::Milliseconds(50)).code(),
            absl::StatusCode::kDeadlineExceeded);
  auto info = store_->Get(keys_.node(1), Deadline());
  ASSERT_TRUE(info.ok());
  kingfisher::v1::NodeInfo n;
  ASSERT_TRUE(n.ParseFromString(info->kv.value));
  EXPECT_EQ(n.state(), kingfisher::v1::NODE_DRAINING);
  Assign(kP0, 2, 2);
  Assign(kP1, 2, 2);
  EXPECT_TRUE(nodes_[0]->Drain(Deadline()).ok());
  EXPECT_TRUE(Serves(2, kP0, 2) || Eventually([&] { return Serves(2, kP0, 2); }));
}

}  // namespace
}  // namespace kf::streaming
