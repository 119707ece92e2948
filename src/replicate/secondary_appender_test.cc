// AppendReplicated over a real WAL adaptor (memory backend) of cluster "west", secondary of
// "east" (docs/replication.md "The secondary"): what it appends, what it answers, and the
// trace shape of docs/tracing.md §6 (scenario 14).
#include "replicate/secondary_appender.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/testing/temp_dir.h"
#include "message/builders.h"
#include "message/message_trace.h"
#include "message/properties.h"
#include "replicate/ddl_pieces.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/tso/timestamp_allocator.h"
#include "streaming/cluster_meta.h"
#include "trace/testing/scoped_in_memory_tracing.h"
#include "wal/testing/memory_backend.h"
#include "wal/txn/txn_message.h"
#include "wal/wal_impl.h"
#include "wire/status_convert.h"

namespace kf::replicate {
namespace {

namespace v1 = kingfisher::v1;

v1::ReplicateConfiguration EastToWest() {
  v1::ReplicateConfiguration c;
  for (const char* id : {"east", "west"}) {
    v1::ReplicateCluster* cluster = c.add_clusters();
    cluster->set_cluster_id(id);
    cluster->set_endpoint(std::string(id) + ":1");
    cluster->add_pchannels(std::string(id) + "-dml_0");
  }
  v1::ReplicateTopologyEdge* e = c.add_topology();
  e->set_source_cluster_id("east");
  e->set_target_cluster_id("west");
  return c;
}

// A message as the primary's WAL stored it: id (entry), timetick, LCMID.
v1::ConsumedMessage Source(MutableMessage m, uint64_t entry, uint64_t tt) {
  m.set_timetick(TimeTick(tt));
  m.set_wal_term(Term(3));
  m.set_last_confirmed_self();
  v1::ConsumedMessage out;
  out.set_message_id(MessageId(WalKind::kLocal, 0, entry).Encode());
  m.EncodeTo(out.mutable_message());
  return out;
}
MutableMessage Row(const std::string& payload) {
  MutableMessage m(MessageType::kInsert, payload);
  m.set_vchannel("east-dml_0_orders");
  return m;
}
MutableMessage InTxn(MutableMessage m, int64_t txn) {
  v1::TxnContext ctx;
  ctx.set_txn_id(txn);
  ctx.set_keepalive_ms(60'000);
  m.set_txn(ctx);
  return m;
}

class SecondaryAppenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tso_ = *TimestampAllocator::Open(dir_.path() + "/tso", {});
    wal_ = std::make_unique<wal::WalImpl>(
        wal::WalOptions{.pchannel = "west-dml_0", .cluster_id = "west", .tso = tso_.get()},
        std::make_unique<wal::testing::MemoryWalBackend>("west-dml_0"));
    ASSERT_TRUE(wal_->Recover().ok());
    MutableMessage alter(MessageType::kAlterReplicateConfig, EastToWest().SerializeAsString());
    alter.set_vchannel("west-dml_0_replicate");
    ASSERT_TRUE(wal_->AppendSync({}, std::move(alter)).ok());
  }
  void TearDown() override { wal_->Close(); }

  v1::ReplicateAppendRequest Request(uint64_t previous) {
    v1::ReplicateAppendRequest r;
    r.set_pchannel("west-dml_0");
    r.set_source_cluster_id("east");
    r.set_source_pchannel("east-dml_0");
    r.set_previous_time_tick(previous);
    return r;
  }
  // The codes of a response, OK for a result without error.
  static std::vector<StreamingCode> Codes(const v1::ReplicateAppendResponse& response) {
    std::vector<StreamingCode> out;
    for (const auto& r : response.results()) {
      out.push_back(r.has_error() ? GetStreamingCode(wire::FromProtoError(r.error()))
                                  : StreamingCode::kOk);
    }
    return out;
  }
  // Every message of the log outside AlterReplicateConfig and TimeTicks (Txn: its inner ones).
  std::vector<ImmutableMessagePtr> Log() {
    auto scanner = *wal_->Read({});
    std::vector<ImmutableMessagePtr> out;
    for (;;) {
      auto m = scanner->Next({}, absl::Now() + absl::Milliseconds(100));
      if (!m.ok()) break;
      const MessageType t = (*m)->type();
      if (t == MessageType::kTimeTick || t == MessageType::kAlterReplicateConfig) continue;
      if (t == MessageType::kTxn) {
        for (const auto& inner : wal::AsTxnMessage(**m)->inner()) out.push_back(inner);
      } else {
        out.push_back(*m);
      }
    }
    return out;
  }

  kf::testing::TempDir dir_;
  std::unique_ptr<TimestampAllocator> tso_;
  std::unique_ptr<wal::WalImpl> wal_;
};

TEST_F(SecondaryAppenderTest, EachMessageIsAppendedOnceUnderThisPChannelWithItsOrigin) {
  v1::ReplicateAppendRequest r = Request(0);
  *r.add_messages() = Source(Row("a"), 5, 100);
  *r.add_messages() = Source(Row("b"), 6, 101);
  EXPECT_EQ(Codes(AppendReplicated(*wal_, r, {})),
            (std::vector<StreamingCode>{StreamingCode::kOk, StreamingCode::kOk}));
  // Sent again (a replicator that did not see the answer): already there, nothing appended.
  EXPECT_EQ(Codes(AppendReplicated(*wal_, r, {})),
            (std::vector<StreamingCode>{StreamingCode::kIgnoredOperation,
                                        StreamingCode::kIgnoredOperation}));
  const std::vector<ImmutableMessagePtr> log = Log();
  ASSERT_EQ(log.size(), 2u);
  const MutableMessage& a = log[0]->message();
  EXPECT_EQ(a.vchannel(), "west-dml_0_orders");
  EXPECT_EQ(a.payload(), "a");
  EXPECT_NE(a.timetick()->value(), 100u);  // this WAL's own timetick
  auto h = a.replicate_header();
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->cluster_id(), "east");
  EXPECT_EQ(h->time_tick(), 100u);
  EXPECT_EQ(h->vchannel(), "east-dml_0_orders");
  EXPECT_EQ(*MessageId::Decode(h->message_id()), MessageId(WalKind::kLocal, 0, 5));
  EXPECT_EQ(*MessageId::Decode(h->last_confirmed_message_id()), MessageId(WalKind::kLocal, 0, 5));
  EXPECT_EQ(log[1]->message().replicate_header()->previous_time_tick(), 100u);
  EXPECT_EQ(wal_->replicate_state().checkpoints(0).time_tick(), 101u);
}

TEST_F(SecondaryAppenderTest, AMessageAfterAGapIsRefusedAndNothingAfterItLands) {
  v1::ReplicateAppendRequest r = Request(0);
  *r.add_messages() = Source(Row("a"), 5, 100);
  ASSERT_EQ(Codes(AppendReplicated(*wal_, r, {}))[0], StreamingCode::kOk);
  v1::ReplicateAppendRequest gap = Request(150);  // the replicator missed what came at 150
  *gap.add_messages() = Source(Row("c"), 9, 200);
  *gap.add_messages() = Source(Row("d"), 10, 201);
  EXPECT_EQ(Codes(AppendReplicated(*wal_, gap, {})),
            (std::vector<StreamingCode>{StreamingCode::kReplicateViolation}));
  EXPECT_EQ(Log().size(), 1u);
}

TEST_F(SecondaryAppenderTest, ATransactionBecomesATxnOfThisWalAndIsTakenOnce) {
  v1::ReplicateAppendRequest r = Request(0);
  v1::ConsumedMessage* txn = r.add_messages();
  *txn->add_inner() = Source(InTxn(NewBeginTxnMessage("east-dml_0_orders", 60'000), 90), 3, 90);
  *txn->add_inner() = Source(InTxn(Row("t1"), 90), 4, 91);
  *txn->add_inner() = Source(InTxn(Row("t2"), 90), 5, 92);
  *txn->add_inner() = Source(NewCommitTxnMessage("east-dml_0_orders", TxnId(90)), 7, 95);
  *r.add_messages() = Source(Row("after"), 8, 96);
  EXPECT_EQ(Codes(AppendReplicated(*wal_, r, {})),
            (std::vector<StreamingCode>{StreamingCode::kOk, StreamingCode::kOk}));
  EXPECT_EQ(Codes(AppendReplicated(*wal_, r, {})),
            (std::vector<StreamingCode>{StreamingCode::kIgnoredOperation,
                                        StreamingCode::kIgnoredOperation}));
  const std::vector<ImmutableMessagePtr> log = Log();  // the duplicate txn was rolled back
  ASSERT_EQ(log.size(), 5u);
  EXPECT_EQ(log[0]->type(), MessageType::kBeginTxn);
  const int64_t mine = log[0]->message().txn()->txn_id();
  EXPECT_NE(mine, 90);
  EXPECT_EQ(log[1]->message().payload(), "t1");
  EXPECT_EQ(log[2]->message().txn()->txn_id(), mine);
  EXPECT_EQ(log[3]->type(), MessageType::kCommitTxn);
  EXPECT_EQ(log[4]->message().payload(), "after");
  EXPECT_EQ(log[4]->message().replicate_header()->previous_time_tick(), 95u);
}

// A transaction is bounded by max_payload_bytes on the primary (TxnManagerOptions); its copy
// carries a `_rh` per message on top, which must not make a secondary configured alike refuse
// what the primary took.
TEST(SecondaryTxnLimitTest, ATransactionAsLargeAsThePrimaryTakesIsTakenHere) {
  constexpr uint64_t kLimit = 64 << 10;
  kf::testing::TempDir dir;
  auto tso = *TimestampAllocator::Open(dir.path() + "/tso", {});
  auto open = [&](const std::string& pchannel, const std::string& cluster) {
    auto wal =
        std::make_unique<wal::WalImpl>(wal::WalOptions{.pchannel = pchannel,
                                                       .cluster_id = cluster,
                                                       .tso = tso.get(),
                                                       .txn = {.max_txn_bytes = kLimit}},
                                       std::make_unique<wal::testing::MemoryWalBackend>(pchannel));
    EXPECT_TRUE(wal->Recover().ok());
    return wal;
  };
  auto east = open("east-dml_0", "east");
  auto west = open("west-dml_0", "west");
  MutableMessage alter(MessageType::kAlterReplicateConfig, EastToWest().SerializeAsString());
  alter.set_vchannel("west-dml_0_replicate");
  ASSERT_TRUE(west->AppendSync({}, std::move(alter)).ok());

  // Filled on the primary with small bodies until one is refused, then committed.
  const std::string v = "east-dml_0_orders";
  auto begin = east->AppendSync({}, NewBeginTxnMessage(v, 60'000));
  ASSERT_TRUE(begin.ok()) << begin.status();
  const TxnId txn(begin->txn->txn_id());
  int bodies = 0;
  for (;; ++bodies) {
    MutableMessage body = InTxn(Row(std::string(200, 'r')), txn.value());
    body.SetProperty("_ik", absl::StrCat("0123456789abcdef:", bodies));
    auto r = east->AppendSync({}, std::move(body));
    if (!r.ok()) {
      ASSERT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
      break;
    }
  }
  ASSERT_GT(bodies, 20);
  ASSERT_TRUE(east->AppendSync({}, NewCommitTxnMessage(v, txn)).ok());

  // Sent as the replicator sends it: the Txn's messages as the primary stored them.
  auto scanner = *east->Read({});
  v1::ReplicateAppendRequest request;
  request.set_pchannel("west-dml_0");
  request.set_source_cluster_id("east");
  request.set_source_pchannel("east-dml_0");
  for (;;) {
    auto m = scanner->Next({}, absl::Now() + absl::Seconds(5));
    ASSERT_TRUE(m.ok()) << m.status();
    if ((*m)->type() != MessageType::kTxn) continue;
    v1::ConsumedMessage* copy = request.add_messages();
    for (const ImmutableMessagePtr& inner : wal::AsTxnMessage(**m)->inner()) {
      v1::ConsumedMessage* piece = copy->add_inner();
      piece->set_message_id(inner->id().Encode());
      inner->message().EncodeTo(piece->mutable_message());
    }
    break;
  }
  ASSERT_EQ(request.messages(0).inner_size(), bodies + 2);
  v1::ReplicateAppendResponse response = AppendReplicated(*west, request, {});
  ASSERT_EQ(response.results_size(), 1);
  EXPECT_FALSE(response.results(0).has_error())
      << wire::FromProtoError(response.results(0).error());
  east->Close();
  west->Close();
}

TEST_F(SecondaryAppenderTest, Scenario14TheReappendRunsUnderReplicateSecondaryChildOfTheSource) {
  trace::testing::ScopedInMemoryTracing tracing;
  auto [source_ctx, source_span] = StartSpan(trace::Context(), "source");
  source_span->End();
  MutableMessage row = Row("traced");
  InjectTraceContext(source_ctx, &row);
  v1::ReplicateAppendRequest r = Request(0);
  *r.add_messages() = Source(std::move(row), 5, 100);
  ASSERT_EQ(Codes(AppendReplicated(*wal_, r, {}))[0], StreamingCode::kOk);

  auto one = [&](const std::string& name) {
    std::vector<trace::SpanData> spans = tracing.SpansNamed(name);
    EXPECT_EQ(spans.size(), 1u) << name;
    return spans.empty() ? trace::SpanData() : spans[0];
  };
  const trace::SpanData received = one("replicate.secondary");
  const trace::SpanData logical = one("wal.autocommit");
  const trace::SpanData append = one("wal.append");
  const trace::SpanData impl = one("wal.appendimpl");
  const trace::SpanContext source = source_ctx.span_context();
  EXPECT_EQ(received.context.trace_id, source.trace_id);
  EXPECT_EQ(received.parent_span_id, source.span_id);
  EXPECT_TRUE(received.parent_remote);  // extracted from `_tc`
  EXPECT_EQ(received.kind, trace::SpanKind::kConsumer);
  EXPECT_EQ(logical.parent_span_id, received.context.span_id);
  EXPECT_EQ(logical.kind, trace::SpanKind::kProducer);
  EXPECT_EQ(append.parent_span_id, logical.context.span_id);
  EXPECT_EQ(impl.parent_span_id, append.context.span_id);
  for (const trace::SpanData& s : {logical, append, impl}) {
    EXPECT_EQ(s.context.trace_id, source.trace_id) << s.name;
  }
  // Stored: the `wal.appendimpl` context, as for any append (a catch-up read marks it with its
  // `wal.catchup_consume`, whose parent is what was stored).
  ASSERT_EQ(Log().size(), 1u);
  int reads_of_it = 0;
  for (const trace::SpanData& read : tracing.SpansNamed("wal.catchup_consume")) {
    reads_of_it += read.parent_span_id == impl.context.span_id ? 1 : 0;
  }
  EXPECT_EQ(reads_of_it, 1);
}

// The copies of the primary's DDL broadcasts (ddl_pieces.h): recorded before, landed after the
// append; a copy whose node died between the two is found landed from the WAL's checkpoint; a
// CreateCollection raises the collection-id counter.
TEST_F(SecondaryAppenderTest, DdlCopiesAreRecordedBeforeAndLandedAfterTheirAppend) {
  auto store = *meta::EmbeddedMetaStore::Open(dir_.path() + "/meta", {});
  const streaming::ClusterKeys keys("west");
  DdlPieces pieces(store.get(), "west");
  const std::shared_ptr<wal::Wal> served(wal_.get(), [](wal::Wal*) {});  // borrowed
  auto piece = [&](uint64_t broadcast) {
    auto got =
        store->Get(keys.replicated_ddl("east", broadcast, 0), absl::Now() + absl::Seconds(5));
    v1::ReplicatedDdlPiece p;
    if (got.ok()) {
      EXPECT_TRUE(p.ParseFromString(got->kv.value));
    }
    return got.ok() ? std::optional<v1::ReplicatedDdlPiece>(p) : std::nullopt;
  };
  v1::CollectionSchema schema;
  schema.set_name("items");
  schema.set_collection_id(42);
  schema.set_dim(4);
  schema.set_metric(v1::L2);
  schema.set_shards(1);
  schema.add_vchannels("east-dml_0_42v0");
  MutableMessage create(MessageType::kCreateCollection, schema.SerializeAsString());
  create.set_vchannel("east-dml_0_42v0");
  v1::BroadcastHeader bh;
  bh.set_broadcast_id(7);
  bh.add_vchannels("east-dml_0_42v0");
  create.set_broadcast_header(bh);
  v1::ReplicateAppendRequest r = Request(0);
  *r.add_messages() = Source(create, 1, 100);
  EXPECT_EQ(Codes(AppendReplicated(*wal_, r, {}, &pieces)), std::vector{StreamingCode::kOk});
  std::optional<v1::ReplicatedDdlPiece> recorded = piece(7);
  ASSERT_TRUE(recorded.has_value());
  EXPECT_TRUE(recorded->landed());
  EXPECT_EQ(recorded->vchannel_count(), 1u);
  EXPECT_EQ(recorded->pchannel(), "west-dml_0");
  auto counter = store->Get(keys.next_collection_id(), absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(counter.ok());
  EXPECT_EQ(counter->kv.value, "42");

  // A node that died after its append and before marking the copy landed.
  MutableMessage drop(MessageType::kDropCollection, "");
  v1::DropCollection payload;
  payload.set_collection_id(42);
  *drop.mutable_payload() = payload.SerializeAsString();
  drop.set_vchannel("east-dml_0_42v0");
  bh.set_broadcast_id(8);
  drop.set_broadcast_header(bh);
  v1::ReplicatedDdlPiece unlanded = *recorded;
  unlanded.set_source_broadcast_id(8);
  unlanded.set_landed(false);
  unlanded.set_source_time_tick(101);
  ASSERT_TRUE(pieces.Offer(unlanded).ok());
  ASSERT_TRUE(pieces.Resolve({served}).ok());
  EXPECT_FALSE(piece(8)->landed());  // not in the log yet
  v1::ReplicateAppendRequest next = Request(100);
  *next.add_messages() = Source(drop, 2, 101);
  EXPECT_EQ(Codes(AppendReplicated(*wal_, next, {})), std::vector{StreamingCode::kOk});
  ASSERT_TRUE(pieces.Resolve({served}).ok());
  EXPECT_TRUE(piece(8)->landed());

  // Once applied (the coordinator's marker), a copy is not recorded again.
  ASSERT_TRUE(
      store->Put(keys.replicated_ddl_done("east", 9), "", absl::Now() + absl::Seconds(5)).ok());
  unlanded.set_source_broadcast_id(9);
  ASSERT_TRUE(pieces.Offer(unlanded).ok());
  EXPECT_FALSE(piece(9).has_value());
}

}  // namespace
}  // namespace kf::replicate
