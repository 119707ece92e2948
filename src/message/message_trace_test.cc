// docs/tracing.md §8 scenarios 1-5: the message-carried trace context primitives.
#include "message/message_trace.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/text_codec.h"
#include "kingfisher/v1/message.pb.h"
#include "trace/in_memory_span_exporter.h"
#include "trace/sampler.h"
#include "trace/sdk_tracer_provider.h"
#include "trace/span_processor.h"
#include "trace/testing/scoped_in_memory_tracing.h"
#include "trace/traceparent.h"

namespace kf {
namespace {

using trace::AttributeValue;
using trace::Context;
using trace::SpanContext;

constexpr char kTraceHex[] = "0102030405060708090a0b0c0d0e0f10";
constexpr char kSpanHex[] = "1112131415161718";

SpanContext RemoteSc() {
  auto sc = trace::ParseTraceparent(std::string("00-") + kTraceHex + "-" + kSpanHex + "-01");
  return *sc;
}

MutableMessage Insert() { return MutableMessage(MessageType::kInsert, "row"); }
MutableMessage TimeTickMsg() { return MutableMessage(MessageType::kTimeTick, ""); }

std::string TcOf(const std::string& trace_id, const std::string& span_id, uint32_t flags) {
  kingfisher::v1::TraceContextHeader h;
  h.set_trace_id(trace_id);
  h.set_span_id(span_id);
  h.set_trace_flags(flags);
  return Base64Encode(h.SerializeAsString());
}

// Always-on sampling into an in-memory exporter, installed as the global provider.
class MessageTraceTest : public ::testing::Test {
 protected:
  // A source span: started and ended by the test before the action.
  Context SourceSpan() {
    auto [ctx, span] = StartSpan(Context(), "source");
    span->End();
    return ctx;
  }

  trace::testing::ScopedInMemoryTracing tracing_;
};

// Scenario 1.
TEST_F(MessageTraceTest, RoundTrip) {
  MutableMessage msg = Insert();
  InjectTraceContext(Context().WithRemoteParent(RemoteSc()), &msg);
  ASSERT_TRUE(msg.HasProperty(prop::kTraceContext));
  // The wire form is exactly base64(TraceContextHeader).
  EXPECT_EQ(
      *msg.GetProperty(prop::kTraceContext),
      TcOf(std::string("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10", 16),
           "\x11\x12\x13\x14\x15\x16\x17\x18", 1));

  SpanContext sc = ExtractTraceContext(Context(), msg).span_context();
  EXPECT_EQ(sc.trace_id.ToHex(), kTraceHex);
  EXPECT_EQ(sc.span_id.ToHex(), kSpanHex);
  EXPECT_EQ(sc.trace_flags, 0x01);
  EXPECT_TRUE(sc.remote);

  // A span started under the extracted context joins the trace as a child of the remote span.
  auto [ctx, span] = StartSpan(ExtractTraceContext(Context(), msg), "wal.catchup_consume");
  span->End();
  auto spans = tracing_.Spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].context.trace_id.ToHex(), kTraceHex);
  EXPECT_EQ(spans[0].parent_span_id.ToHex(), kSpanHex);
  EXPECT_TRUE(spans[0].parent_remote);
}

TEST_F(MessageTraceTest, UnsampledContextIsStillWritten) {
  SpanContext unsampled = RemoteSc();
  unsampled.trace_flags = 0;
  MutableMessage msg = Insert();
  InjectTraceContext(Context().WithRemoteParent(unsampled), &msg);
  SpanContext sc = ExtractTraceContext(Context(), msg).span_context();
  EXPECT_EQ(sc.trace_id.ToHex(), kTraceHex);
  EXPECT_EQ(sc.trace_flags, 0);
}

// `_tc` is serialized by hand; every flags value must give protobuf's exact bytes (0 omits
// the field, >= 0x80 needs a two-byte varint).
TEST_F(MessageTraceTest, WireFormMatchesProtobufForEveryFlagsValue) {
  const std::string trace_id(reinterpret_cast<const char*>(RemoteSc().trace_id.bytes.data()), 16);
  const std::string span_id(reinterpret_cast<const char*>(RemoteSc().span_id.bytes.data()), 8);
  for (uint32_t flags = 0; flags <= 0xff; ++flags) {
    SpanContext sc = RemoteSc();
    sc.trace_flags = static_cast<uint8_t>(flags);
    MutableMessage msg = Insert();
    OverwriteTraceContext(Context().WithRemoteParent(sc), &msg);
    EXPECT_EQ(*msg.GetProperty(prop::kTraceContext), TcOf(trace_id, span_id, flags)) << flags;
  }
}

// Scenario 2.
TEST_F(MessageTraceTest, InjectWithoutSpanInjectTwiceAndOverwrite) {
  MutableMessage msg = Insert();
  InjectTraceContext(Context(), &msg);
  EXPECT_FALSE(msg.HasProperty(prop::kTraceContext));

  Context first = SourceSpan();
  Context second = SourceSpan();
  ASSERT_NE(first.span_context().span_id, second.span_context().span_id);
  InjectTraceContext(first, &msg);
  InjectTraceContext(second, &msg);
  EXPECT_EQ(ExtractTraceContext(Context(), msg).span_context().span_id,
            first.span_context().span_id);

  OverwriteTraceContext(second, &msg);
  SpanContext sc = ExtractTraceContext(Context(), msg).span_context();
  EXPECT_EQ(sc.trace_id, second.span_context().trace_id);
  EXPECT_EQ(sc.span_id, second.span_context().span_id);

  // Overwrite with no span changes nothing either.
  OverwriteTraceContext(Context(), &msg);
  EXPECT_EQ(ExtractTraceContext(Context(), msg).span_context().span_id,
            second.span_context().span_id);
  InjectTraceContext(first, nullptr);  // safe
}

// A producer's attempt encodes the message with its own `_tc` without copying it: the bytes
// are exactly those of a copy overwritten and encoded, with or without a `_tc` before, and
// with no span (the message's own `_tc` stays).
TEST_F(MessageTraceTest, EncodeWithTraceContextEqualsOverwriteOnACopy) {
  MutableMessage plain = Insert();
  plain.SetProperty("user.z", "last");
  plain.SetProperty("a", "first");
  MutableMessage traced = plain;
  InjectTraceContext(SourceSpan(), &traced);
  const Context attempt = SourceSpan();
  for (const MutableMessage& m : {plain, traced}) {
    for (const Context& ctx : {attempt, Context()}) {
      MutableMessage copy = m;
      OverwriteTraceContext(ctx, &copy);
      std::string expected;
      copy.EncodeTo(&expected);
      std::string got = "prefix";
      EncodeWithTraceContext(ctx, m, &got);
      EXPECT_EQ(got, "prefix" + expected);
    }
  }
}

// Scenario 3.
TEST_F(MessageTraceTest, TimeTickIsNeverTraced) {
  Context source = SourceSpan();
  tracing_.Reset();
  MutableMessage tt = TimeTickMsg();
  tt.set_timetick(TimeTick(100));

  auto [ctx, span] = StartSpanForMessage(source, &tt, "wal.append");
  EXPECT_EQ(ctx.span(), source.span());  // the same context
  EXPECT_EQ(ctx.span_context(), source.span_context());
  EXPECT_FALSE(span->IsRecording());
  span->SetStatus(trace::SpanStatusCode::kError, "x");
  span->RecordError(absl::InternalError("boom"));
  span->SetAttribute("k", int64_t{1});
  span->End();

  InjectTraceContext(source, &tt);
  EXPECT_FALSE(tt.HasProperty(prop::kTraceContext));
  OverwriteTraceContext(source, &tt);
  EXPECT_FALSE(tt.HasProperty(prop::kTraceContext));

  auto [nctx, nspan] = StartSpanForMessage(source, nullptr, "wal.append");
  EXPECT_EQ(nctx.span(), source.span());
  EXPECT_FALSE(nspan->IsRecording());
  nspan->End();

  EXPECT_TRUE(tracing_.Spans().empty());
}

// Scenario 4.
TEST_F(MessageTraceTest, MessageAttributes) {
  MutableMessage msg = Insert();
  msg.set_vchannel("v1");
  msg.set_timetick(TimeTick(100));
  kingfisher::v1::TxnContext txn;
  txn.set_txn_id(42);
  txn.set_keepalive_ms(1000);
  msg.set_txn(txn);

  auto [ctx, span] = StartSpanForMessage(Context(), &msg, "wal.append");
  EXPECT_TRUE(span->IsRecording());
  span->End();
  auto spans = tracing_.Spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].name, "wal.append");
  const trace::Attributes want = {{"message.type", std::string("Insert")},
                                  {"message.vchannel", std::string("v1")},
                                  {"message.timetick", int64_t{100}},
                                  {"txn.id", int64_t{42}},
                                  {"message.replicate", false}};
  EXPECT_EQ(spans[0].attributes, want);

  tracing_.Reset();
  kingfisher::v1::ReplicateHeader rh;
  rh.set_cluster_id("primary");
  msg.set_replicate_header(rh);
  auto [ctx2, span2] = StartSpanForMessage(Context(), &msg, "wal.append");
  span2->End();
  spans = tracing_.Spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(std::get<bool>(spans[0].attributes.at("message.replicate")), true);
}

TEST_F(MessageTraceTest, BroadcastAndTimetickLessAttributes) {
  MutableMessage msg(MessageType::kDropCollection, "");
  kingfisher::v1::BroadcastHeader bh;
  bh.set_broadcast_id(7);
  bh.add_vchannels("v1");
  bh.add_vchannels("v2");
  msg.set_broadcast_header(bh);

  auto [ctx, span] =
      StartSpanForMessage(Context(), &msg, "wal.broadcast", trace::SpanKind::kProducer);
  span->End();
  auto spans = tracing_.Spans();
  ASSERT_EQ(spans.size(), 1u);
  const trace::Attributes want = {{"message.type", std::string("DropCollection")},
                                  {"message.vchannel", std::string("")},
                                  {"message.replicate", false},
                                  {"broadcast.id", int64_t{7}},
                                  {"broadcast.vchannels", std::vector<std::string>{"v1", "v2"}}};
  EXPECT_EQ(spans[0].attributes, want);  // no timetick yet, no txn
  EXPECT_EQ(spans[0].kind, trace::SpanKind::kProducer);
  EXPECT_EQ(spans[0].scope, "kingfisher.streaming.wal");
}

// The adaptor's persisting attempt: the span has the stamped message's attributes (its
// timetick too) and the stamp, not the message, gets the span's `_tc`; Overwrite's rules hold.
TEST_F(MessageTraceTest, StampedSpanAttributesAndTraceContext) {
  Context source = SourceSpan();
  tracing_.Reset();
  MutableMessage msg = Insert();
  msg.set_vchannel("v1");
  InjectTraceContext(source, &msg);
  const MutableMessage before = msg;

  AppendStamp stamp{.timetick = TimeTick(100), .term = Term(3)};
  auto [ctx, span] = StartSpanForStampedMessage(source, msg, "wal.appendimpl", &stamp);
  span->End();
  EXPECT_EQ(msg, before);
  auto spans = tracing_.Spans();
  ASSERT_EQ(spans.size(), 1u);
  const trace::Attributes want = {{"message.type", std::string("Insert")},
                                  {"message.vchannel", std::string("v1")},
                                  {"message.timetick", int64_t{100}},
                                  {"message.replicate", false}};
  EXPECT_EQ(spans[0].attributes, want);
  EXPECT_EQ(spans[0].parent_span_id, source.span_context().span_id);

  // As OverwriteTraceContext with the new span would have left the message.
  MutableMessage overwritten = msg;
  OverwriteTraceContext(ctx, &overwritten);
  msg.Stamp(stamp);
  EXPECT_EQ(msg.GetProperty(prop::kTraceContext), overwritten.GetProperty(prop::kTraceContext));
  EXPECT_EQ(ExtractTraceContext(Context(), msg).span_context().span_id, ctx.span_context().span_id);

  // A TimeTick: the same context, nothing recorded, `_tc` left out of the stamp.
  tracing_.Reset();
  AppendStamp tick_stamp{.timetick = TimeTick(101), .term = Term(3)};
  auto [tick_ctx, tick_span] =
      StartSpanForStampedMessage(source, TimeTickMsg(), "wal.appendimpl", &tick_stamp);
  tick_span->End();
  EXPECT_EQ(tick_ctx.span(), source.span());
  EXPECT_EQ(tick_stamp.trace_context_size, 0u);
  EXPECT_TRUE(tracing_.Spans().empty());
}

// Scenario 5.
TEST_F(MessageTraceTest, BrokenTraceContextLeavesContextUnchanged) {
  Context base = SourceSpan();
  const std::string t16(16, '\x01');
  const std::string s8(8, '\x02');
  std::vector<std::pair<std::string, std::optional<std::string>>> cases = {
      {"missing", std::nullopt},
      {"not base64", "!!!not-base64!!!"},
      {"short trace id", TcOf(t16.substr(1), s8, 1)},
      {"long span id", TcOf(t16, s8 + "x", 1)},
      {"empty ids", TcOf("", "", 1)},
      {"zero trace id", TcOf(std::string(16, '\0'), s8, 1)},
      {"zero span id", TcOf(t16, std::string(8, '\0'), 1)},
      {"flags out of range", TcOf(t16, s8, 0x100)},
      {"not a proto", Base64Encode("\xff\xff\xff")},
  };
  for (const auto& [what, tc] : cases) {
    SCOPED_TRACE(what);
    MutableMessage msg = Insert();
    if (tc) msg.SetProperty(std::string(prop::kTraceContext), *tc);
    Context got = ExtractTraceContext(base, msg);
    EXPECT_EQ(got.span(), base.span());
    EXPECT_EQ(got.span_context(), base.span_context());
    // And from the background context: still no span.
    EXPECT_FALSE(ExtractTraceContext(Context(), msg).span_context().IsValid());
  }
  // The control: a well-formed _tc does change the context.
  MutableMessage ok = Insert();
  ok.SetProperty(std::string(prop::kTraceContext), TcOf(t16, s8, 1));
  EXPECT_NE(ExtractTraceContext(base, ok).span(), base.span());
}

// ExtractTraceContext parses the usual header shapes by hand; whatever the bytes, it must judge
// them as the generated protobuf parser does (the reference below is the generated code).
std::optional<SpanContext> ReferenceParse(const std::string& text) {
  auto bytes = Base64Decode(text);
  if (!bytes) return std::nullopt;
  kingfisher::v1::TraceContextHeader h;
  if (!h.ParseFromString(*bytes) || h.trace_flags() > 0xff || h.trace_id().size() != 16 ||
      h.span_id().size() != 8) {
    return std::nullopt;
  }
  SpanContext sc;
  std::copy(h.trace_id().begin(), h.trace_id().end(), sc.trace_id.bytes.begin());
  std::copy(h.span_id().begin(), h.span_id().end(), sc.span_id.bytes.begin());
  sc.trace_flags = static_cast<uint8_t>(h.trace_flags());
  sc.remote = true;
  return sc;
}

// Header bytes as writers produce them, and as they should not: fields in any order and
// repeated, ids of odd lengths, long and overlong varints, unknown fields, truncation, noise.
std::string RandomHeaderBytes(std::mt19937_64& rng) {
  auto pick = [&rng](uint64_t n) { return rng() % n; };
  auto varint = [](uint64_t v, int extra_zero_bytes) {
    std::string out;
    while (v >= 0x80 || extra_zero_bytes > 0) {
      out += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
      if (v == 0 && extra_zero_bytes > 0) --extra_zero_bytes;
    }
    out += static_cast<char>(v);
    return out;
  };
  auto random_bytes = [&](size_t n) {
    std::string out(n, '\0');
    for (char& c : out) c = static_cast<char>(pick(256));
    return out;
  };
  std::string b;
  const int fields = static_cast<int>(pick(5));
  for (int f = 0; f < fields; ++f) {
    switch (pick(8)) {
      case 0:
      case 1: {
        const size_t n = pick(4) != 0 ? 16 : pick(4) != 0 ? pick(20) : 130;
        b += '\x0a' + varint(n, 0) + random_bytes(n);
        break;
      }
      case 2:
      case 3: {
        const size_t n = pick(4) != 0 ? 8 : pick(12);
        b += '\x12' + varint(n, 0) + random_bytes(n);
        break;
      }
      case 4:
      case 5: {
        const uint64_t v = pick(3) != 0 ? pick(256) : pick(2) != 0 ? rng() >> pick(64) : ~0ull;
        b += '\x18' + varint(v, pick(4) == 0 ? static_cast<int>(pick(8)) : 0);
        break;
      }
      case 6:  // an unknown field: varint, fixed32, or bytes long enough to need the heap
        b += pick(3) == 0   ? std::string("\x20") + varint(rng(), 0)
             : pick(2) == 0 ? std::string("\x2d") + random_bytes(4)
                            : std::string("\x2a") + varint(60, 0) + random_bytes(60);
        break;
      default:  // a wire type the field does not have
        b += pick(2) == 0 ? std::string("\x08") + varint(pick(300), 0)
                          : std::string("\x1a") + varint(2, 0) + random_bytes(2);
    }
  }
  if (!b.empty() && pick(8) == 0) b.resize(pick(b.size()));
  if (!b.empty() && pick(8) == 0) b[pick(b.size())] = static_cast<char>(pick(256));
  return b;
}

TEST(ExtractTraceContextTest, JudgesEveryHeaderAsTheGeneratedParser) {
  std::mt19937_64 rng(11);
  int valid = 0;
  for (int i = 0; i < 50000; ++i) {
    const std::string text = Base64Encode(RandomHeaderBytes(rng));
    MutableMessage msg = Insert();
    msg.SetProperty(std::string(prop::kTraceContext), text);
    const std::optional<SpanContext> want = ReferenceParse(text);
    const SpanContext expected =
        want ? Context().WithRemoteParent(*want).span_context() : Context().span_context();
    ASSERT_EQ(ExtractTraceContext(Context(), msg).span_context(), expected) << text;
    valid += expected.IsValid();
  }
  EXPECT_GT(valid, 1000);  // the generator reaches the accepting path often enough to matter
}

}  // namespace
}  // namespace kf
