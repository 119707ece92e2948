// append_path_bench: the per-append CPU of the message work the Wal adaptor does on the
// appending thread (src/wal/wal_impl.cc Submit, src/wal/sequencer.cc SequenceOnce), one component
// at a time, single-threaded (no disk, no backend threads), so a change to src/message, src/trace
// or the TSO shows up as nanoseconds instead of drowning in local_wal_bench's noise.
//
// BM_Stage/N runs the first N steps of the adaptor's sequence on a fresh 1 KiB message, as
// local_wal_bench's adaptor mode builds it; step N's cost is BM_Stage/N - BM_Stage/(N-1):
//   0 build: MutableMessage(kInsert, payload copy) + set_vchannel + set_idempotency_key,
//     destroyed at the end (the sequencer frees it on this thread too)
//   1 + StartSpanForMessage("wal.append") (no-op provider) and dropping the span
//   2 + TimestampAllocator::Allocate(1)
//   3 + the AppendStamp (timetick, term, LCMID self)
//   4 + StartSpanForStampedMessage("wal.appendimpl") (the stamp gets `_tc`)
//   5 + EncodeTo(stamp) (the string the backend gets; freed here)
//   6 + msg.txn() (txn_interceptor.cc, for txn messages)
// (The message itself is stamped only when a tailing reader keeps it, after it is durable, on
// the completion thread.)
// The other benchmarks time single operations in isolation (the collection rules, the batch
// CRC32C).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <string>

#include "common/crc32c.h"
#include "message/builders.h"
#include "message/message.h"
#include "message/message_trace.h"
#include "storage/tso/timestamp_allocator.h"
#include "wal/collections/collection_table.h"
#include "wal/idempotency.h"
#include "wal/wal.h"

namespace {

const std::string& Payload() {
  static const auto* p = new std::string(1024, 'e');
  return *p;
}

kf::TimestampAllocator& Tso() {
  static kf::TimestampAllocator* tso = [] {
    const std::string path =
        (std::filesystem::temp_directory_path() / "append_path_bench.tso").string();
    std::filesystem::remove(path);
    auto t = kf::TimestampAllocator::Open(path, {});
    if (!t.ok()) std::abort();
    return t->release();
  }();
  return *tso;
}

kf::MutableMessage BuildMessage(uint64_t seq) {
  kf::MutableMessage m(kf::MessageType::kInsert, Payload());
  m.set_vchannel("inflight_bench");
  m.set_idempotency_key("bench:" + std::to_string(seq));
  return m;
}

void BM_Stage(benchmark::State& state) {
  const int stage = static_cast<int>(state.range(0));
  const kf::Term term(1);
  uint64_t seq = 0;
  for (auto _ : state) {
    kf::MutableMessage m = BuildMessage(seq++);
    kf::trace::Context append_ctx;
    std::shared_ptr<kf::trace::Span> append_span, impl_span;
    if (stage >= 1)
      std::tie(append_ctx, append_span) = kf::StartSpanForMessage({}, &m, "wal.append");
    kf::TimeTick tt;
    if (stage >= 2) tt = *Tso().Allocate(1);
    kf::AppendStamp stamp;
    if (stage >= 3) stamp = kf::AppendStamp{.timetick = tt, .term = term};
    if (stage >= 4) {
      impl_span = kf::StartSpanForStampedMessage(append_ctx, m, "wal.appendimpl", &stamp).second;
    }
    if (stage >= 5) {
      std::string encoded;
      m.EncodeTo(&encoded, stamp);
      benchmark::DoNotOptimize(encoded.data());
    }
    if (stage >= 6) benchmark::DoNotOptimize(m.txn());
    benchmark::DoNotOptimize(m);
  }
}
BENCHMARK(BM_Stage)->DenseRange(0, 6);

// A message as the backend receives it: every system property the adaptor stamps.
kf::MutableMessage StampedMessage() {
  kf::MutableMessage m = BuildMessage(123456);
  kf::AppendStamp stamp{.timetick = kf::TimeTick(uint64_t{1} << 58), .term = kf::Term(1)};
  auto [ctx, span] = kf::StartSpanForMessage({}, &m, "wal.append");
  kf::StartSpanForStampedMessage(ctx, m, "wal.appendimpl", &stamp);
  m.Stamp(stamp);
  return m;
}

void BM_Encode(benchmark::State& state) {
  const kf::MutableMessage m = StampedMessage();
  for (auto _ : state) {
    std::string encoded = m.Encode();
    benchmark::DoNotOptimize(encoded.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * m.EncodedSize()));
}
BENCHMARK(BM_Encode);

void BM_Decode(benchmark::State& state) {
  const std::string encoded = StampedMessage().Encode();
  for (auto _ : state) benchmark::DoNotOptimize(kf::MutableMessage::Decode(encoded));
}
BENCHMARK(BM_Decode);

void BM_SetTimeTickExisting(benchmark::State& state) {
  kf::MutableMessage m = StampedMessage();
  uint64_t t = uint64_t{1} << 58;
  for (auto _ : state) m.set_timetick(kf::TimeTick(++t));
}
BENCHMARK(BM_SetTimeTickExisting);

void BM_StartSpanForMessageNoop(benchmark::State& state) {
  const kf::MutableMessage m = StampedMessage();
  for (auto _ : state) benchmark::DoNotOptimize(kf::StartSpanForMessage({}, &m, "wal.append"));
}
BENCHMARK(BM_StartSpanForMessageNoop);

void BM_OverwriteTraceContext(benchmark::State& state) {
  kf::MutableMessage m = StampedMessage();
  auto [ctx, span] = kf::StartSpanForMessage({}, &m, "wal.append");
  for (auto _ : state) kf::OverwriteTraceContext(ctx, &m);
}
BENCHMARK(BM_OverwriteTraceContext);

void BM_TsoAllocate(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(Tso().Allocate(1));
}
BENCHMARK(BM_TsoAllocate);

// The collection rules on the append path (wal/collections/collection_table.h): Prepare on the
// appending thread, Admit under the sequencer lock. Arg 0: a raw vchannel (name parse only);
// arg 1: an Insert of 64 rows x dim 4 (1 KiB of floats) into a created collection (name parse,
// header peek, one hash lookup among 1000 collection vchannels).
void BM_CollectionRules(benchmark::State& state) {
  kf::wal::CollectionTable table;
  for (int id = 1; id <= 1000; ++id) {
    kingfisher::v1::CollectionSchema s;
    s.set_name("c");
    s.set_collection_id(id);
    s.set_dim(4);
    s.set_metric(kingfisher::v1::L2);
    s.set_shards(1);
    table.Replay(kf::NewCreateCollectionMessage("kf-dml_0_" + std::to_string(id) + "v0", s));
  }
  kingfisher::v1::InsertBatch b;
  b.set_dim(4);
  for (int row = 0; row < 64; ++row) {
    b.add_pks(row);
    for (int i = 0; i < 4; ++i) b.add_vectors(static_cast<float>(i));
  }
  const kf::MutableMessage m =
      kf::NewInsertMessage(state.range(0) == 0 ? "kf-dml_0_orders" : "kf-dml_0_500v0", b);
  for (auto _ : state) {
    kf::wal::CollectionAppend a;  // as in the adaptor's Pending
    benchmark::DoNotOptimize(kf::wal::CollectionTable::Prepare(m, &a));
    benchmark::DoNotOptimize(table.Admit(m.vchannel(), a));
  }
}
BENCHMARK(BM_CollectionRules)->Arg(0)->Arg(1);

// The batch checksum the local backend's writer computes (and every reader verifies).
// The adaptor's deduplication table as local_wal_bench's adaptor (a) drives it: one producer,
// increasing sequences, `range(0)` appends in flight, each completed in order; the default
// window (WalOptions::dedup_window_per_producer). Per iteration: one Begin and one Complete
// (Parse of `_ik` not included).
void BM_IdempotencyInFlight(benchmark::State& state) {
  const uint64_t in_flight = static_cast<uint64_t>(state.range(0));
  kf::wal::IdempotencyTable<kf::wal::AppendResult> table(4096, 1024);
  kf::wal::IdempotencyKey key{.producer = "bench-producer-0123456789", .sequence = 0};
  kf::wal::AppendResult result{.id = kf::MessageId::Local(1), .timetick = kf::TimeTick(1)};
  for (auto _ : state) {
    kf::wal::IdempotencyTable<kf::wal::AppendResult>::Waiter w;
    benchmark::DoNotOptimize(table.Begin(key, w));
    if (key.sequence >= in_flight) {
      const uint64_t done = key.sequence - in_flight;
      table.Complete({key.producer, done}, result);
    }
    ++key.sequence;
  }
}
BENCHMARK(BM_IdempotencyInFlight)->Arg(1)->Arg(4096);

void BM_Crc32c(benchmark::State& state) {
  const std::string data(static_cast<size_t>(state.range(0)), 'c');
  for (auto _ : state) benchmark::DoNotOptimize(kf::crc32c::Value(data));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * data.size()));
}
BENCHMARK(BM_Crc32c)->Arg(1 << 10)->Arg(64 << 10)->Arg(1 << 20);

}  // namespace

BENCHMARK_MAIN();
