#include "message/message.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "common/errors.h"
#include "common/text_codec.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "message/builders.h"

namespace kf {
namespace {

using kingfisher::v1::Message;

std::string DeterministicSerialize(const Message& pb) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    EXPECT_TRUE(pb.SerializeToCodedStream(&coded));
  }
  return out;
}

MutableMessage Sample() {
  MutableMessage m(MessageType::kInsert, std::string("pay\0load", 8));
  m.set_vchannel("kf-dml_0_7v1");
  m.set_timetick(TimeTick(123456789));
  m.set_wal_term(Term(3));
  m.set_last_confirmed(MessageId(WalKind::kObjectStore, 4, 5));
  m.set_idempotency_key("producer-1:17");
  m.SetProperty("user", "value");
  m.SetProperty("empty", "");
  m.SetProperty("utf8", "h\xc3\xa9llo");
  return m;
}

TEST(MessageTypeTest, NamesAndNumbers) {
  EXPECT_EQ(MessageTypeName(MessageType::kInsert), "Insert");
  EXPECT_EQ(MessageTypeName(MessageType::kTimeTick), "TimeTick");
  EXPECT_EQ(MessageTypeName(MessageType::kTxn), "Txn");
  EXPECT_EQ(MessageTypeName(MessageType::kAlterReplicateConfig), "AlterReplicateConfig");
  EXPECT_EQ(MessageTypeName(MessageType::kUnknown), "Unknown");
  EXPECT_EQ(MessageTypeName(static_cast<MessageType>(77)), "Unknown");
  EXPECT_EQ(MessageTypeFromNumber(901), MessageType::kCommitTxn);
  EXPECT_EQ(MessageTypeFromNumber(10), MessageType::kCreateSegment);
  for (int64_t n :
       std::initializer_list<int64_t>{0, 11, 799, 801, 899, 903, 998, 1000, -1, int64_t{1} << 40}) {
    EXPECT_EQ(MessageTypeFromNumber(n), std::nullopt) << n;
  }
}

TEST(MessageTypeTest, Classes) {
  EXPECT_TRUE(IsSystemType(MessageType::kTimeTick));
  EXPECT_TRUE(IsSystemType(MessageType::kTxn));
  EXPECT_TRUE(IsSystemType(MessageType::kRollbackTxn));
  EXPECT_FALSE(IsSystemType(MessageType::kInsert));
  EXPECT_TRUE(IsExclusiveType(MessageType::kManualFlush));
  EXPECT_TRUE(IsExclusiveType(MessageType::kAlterReplicateConfig));
  EXPECT_FALSE(IsExclusiveType(MessageType::kFlush));
  EXPECT_TRUE(IsSelfControlledType(MessageType::kFlush));
  EXPECT_TRUE(IsSelfControlledType(MessageType::kCreateSegment));
  EXPECT_FALSE(IsSelfControlledType(MessageType::kManualFlush));
  EXPECT_TRUE(IsTxnControlType(MessageType::kBeginTxn));
  EXPECT_FALSE(IsTxnControlType(MessageType::kTxn));
  EXPECT_TRUE(IsReservedKey("_x"));
  EXPECT_FALSE(IsReservedKey("x_"));
  EXPECT_FALSE(IsReservedKey(""));
}

TEST(MutableMessageTest, ConstructorSetsTypeAndVersion) {
  MutableMessage m(MessageType::kCommitTxn, "p");
  EXPECT_EQ(m.type(), MessageType::kCommitTxn);
  EXPECT_EQ(m.GetProperty(prop::kType), "901");
  EXPECT_EQ(m.GetProperty(prop::kVersion), "2");
  EXPECT_EQ(m.payload(), "p");
  EXPECT_EQ(MutableMessage().type(), MessageType::kUnknown);
  EXPECT_TRUE(MutableMessage().properties().empty());
}

TEST(MutableMessageTest, TypeFromGarbageIsUnknown) {
  MutableMessage m(MessageType::kInsert, "");
  for (const char* bad : {"", "02", "+2", "-2", "2 ", "x", "11", "999999999999999999999"}) {
    m.SetProperty(std::string(prop::kType), bad);
    EXPECT_EQ(m.type(), MessageType::kUnknown) << bad;
  }
  m.EraseProperty(prop::kType);
  EXPECT_EQ(m.type(), MessageType::kUnknown);
}

TEST(MutableMessageTest, PropertiesAndVChannel) {
  MutableMessage m(MessageType::kInsert, "");
  EXPECT_EQ(m.vchannel(), "");
  m.set_vchannel("kf-dml_1_orders");
  EXPECT_EQ(m.vchannel(), "kf-dml_1_orders");
  EXPECT_EQ(m.GetProperty("_vc"), "kf-dml_1_orders");
  m.set_vchannel("");
  EXPECT_FALSE(m.HasProperty(prop::kVChannel));
  m.SetProperty("a", "1");
  m.SetProperty("a", "2");
  EXPECT_EQ(m.GetProperty("a"), "2");
  m.EraseProperty("a");
  m.EraseProperty("never-there");
  EXPECT_FALSE(m.GetProperty("a").has_value());
}

TEST(MutableMessageTest, TimeTickAndTermAreBase36) {
  MutableMessage m(MessageType::kInsert, "");
  EXPECT_EQ(m.timetick(), std::nullopt);
  EXPECT_EQ(m.wal_term(), std::nullopt);
  m.set_timetick(TimeTick(36 * 36 + 35));
  EXPECT_EQ(m.GetProperty("_tt"), "10z");
  EXPECT_EQ(m.timetick(), TimeTick(36 * 36 + 35));
  m.set_timetick(TimeTick(UINT64_MAX));
  EXPECT_EQ(m.timetick(), TimeTick(UINT64_MAX));
  m.set_wal_term(Term(35));
  EXPECT_EQ(m.GetProperty("_wt"), "z");
  EXPECT_EQ(m.wal_term(), Term(35));
  m.SetProperty("_tt", "ZZ");
  EXPECT_EQ(m.timetick(), std::nullopt);
  m.SetProperty("_wt", Base36Encode(UINT64_MAX));  // does not fit a Term
  EXPECT_EQ(m.wal_term(), std::nullopt);
}

TEST(MutableMessageTest, LastConfirmed) {
  MutableMessage m(MessageType::kInsert, "");
  EXPECT_EQ(m.last_confirmed(), std::nullopt);
  EXPECT_FALSE(m.last_confirmed_is_self());
  const MessageId id(WalKind::kQuorum, 9, 10);
  m.set_last_confirmed(id);
  EXPECT_EQ(m.GetProperty("_lc"), Base64Encode(id.Encode()));
  EXPECT_EQ(m.last_confirmed(), id);
  m.set_last_confirmed_self();
  EXPECT_TRUE(m.last_confirmed_is_self());
  EXPECT_EQ(m.GetProperty("_lcs"), "");
  EXPECT_FALSE(m.HasProperty("_lc"));
  EXPECT_EQ(m.last_confirmed(), std::nullopt);
  m.set_last_confirmed(id);
  EXPECT_FALSE(m.last_confirmed_is_self());
  m.SetProperty("_lc", "not base64!");
  EXPECT_EQ(m.last_confirmed(), std::nullopt);
  m.SetProperty("_lc", Base64Encode("\x07garbage"));
  EXPECT_EQ(m.last_confirmed(), std::nullopt);
}

TEST(MutableMessageTest, ProtoHeaders) {
  MutableMessage m(MessageType::kCreateCollection, "");
  EXPECT_FALSE(m.txn() || m.broadcast_header() || m.replicate_header());
  kingfisher::v1::TxnContext txn;
  txn.set_txn_id(-5);
  txn.set_keepalive_ms(10000);
  m.set_txn(txn);
  ASSERT_TRUE(m.txn());
  EXPECT_EQ(m.txn()->txn_id(), -5);
  EXPECT_EQ(m.txn()->keepalive_ms(), 10000);
  EXPECT_TRUE(Base64Decode(*m.GetProperty("_tx")).has_value());

  kingfisher::v1::BroadcastHeader bh;
  bh.set_broadcast_id(77);
  bh.add_vchannels("kf-dml_0_1v0");
  bh.add_resource_keys()->set_key("orders");
  bh.set_ack_sync_up(true);
  m.set_broadcast_header(bh);
  ASSERT_TRUE(m.broadcast_header());
  EXPECT_EQ(m.broadcast_header()->SerializeAsString(), bh.SerializeAsString());

  kingfisher::v1::ReplicateHeader rh;
  rh.set_cluster_id("primary");
  rh.set_time_tick(99);
  m.set_replicate_header(rh);
  ASSERT_TRUE(m.replicate_header());
  EXPECT_EQ(m.replicate_header()->cluster_id(), "primary");

  m.SetProperty("_tx", "!!!!");
  EXPECT_EQ(m.txn(), std::nullopt);
  m.SetProperty("_bh", Base64Encode("\xff\xff\xff"));  // base64 but not a proto
  EXPECT_EQ(m.broadcast_header(), std::nullopt);
}

TEST(MutableMessageTest, IdempotencyKeyAndNotPersisted) {
  MutableMessage m = NewTimeTickMessage(TimeTick(5));
  EXPECT_FALSE(m.not_persisted());
  m.set_not_persisted();
  EXPECT_TRUE(m.not_persisted());
  EXPECT_EQ(m.GetProperty("_np"), "");
  EXPECT_EQ(m.idempotency_key(), std::nullopt);
  m.set_idempotency_key("p:1");
  EXPECT_EQ(m.idempotency_key(), "p:1");
}

TEST(MutableMessageTest, EncodeDecodeRoundTrip) {
  const MutableMessage m = Sample();
  const std::string bytes = m.Encode();
  EXPECT_EQ(bytes.size(), m.EncodedSize());
  auto back = MutableMessage::Decode(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, m);
  EXPECT_EQ(back->Encode(), bytes);

  std::string appended = "prefix";
  m.EncodeTo(&appended);
  EXPECT_EQ(appended, "prefix" + bytes);

  const MutableMessage empty;
  EXPECT_EQ(empty.Encode(), "");
  EXPECT_EQ(empty.EncodedSize(), 0u);
  auto empty_back = MutableMessage::Decode("");
  ASSERT_TRUE(empty_back.ok());
  EXPECT_EQ(*empty_back, empty);
}

TEST(MutableMessageTest, DecodeIntoTheBytesStorageReadsTheSameMessage) {
  const std::string sample = Sample().Encode();
  // The payload field first (as we encode), after the properties (as protobuf may), empty,
  // absent, and one that does not parse.
  const std::string properties_first = std::string("\x12\x03\x0a\x01k", 5) + "\x0a\x03pay";
  for (const std::string& bytes :
       {sample, properties_first, std::string("\x0a\x00", 2), std::string("\x12\x03\x0a\x01k", 5),
        sample.substr(0, sample.size() - 1)}) {
    auto viewed = MutableMessage::Decode(bytes);
    auto owned = MutableMessage::DecodeOwned(std::string(bytes));
    ASSERT_EQ(owned.ok(), viewed.ok()) << owned.status() << " / " << viewed.status();
    if (!owned.ok()) {
      EXPECT_EQ(owned.status(), viewed.status());
      continue;
    }
    EXPECT_EQ(*owned, *viewed);
    EXPECT_EQ(owned->Encode(), viewed->Encode());
  }
  EXPECT_EQ(MutableMessage::DecodeOwned(std::string(properties_first))->payload(), "pay");
}

TEST(MutableMessageTest, DecodeTypeSkipsThePayload) {
  EXPECT_EQ(MutableMessage::DecodeType(Sample().Encode()), MessageType::kInsert);
  MutableMessage drop(MessageType::kDropCollection, std::string(1 << 20, 'x'));
  drop.set_vchannel("kf-dml_0_7v1");
  EXPECT_EQ(MutableMessage::DecodeType(drop.Encode()), MessageType::kDropCollection);
  MutableMessage untyped = Sample();
  untyped.EraseProperty(prop::kType);
  EXPECT_EQ(MutableMessage::DecodeType(untyped.Encode()), MessageType::kUnknown);
  untyped.SetProperty(std::string(prop::kType), "05");  // not canonical
  EXPECT_EQ(MutableMessage::DecodeType(untyped.Encode()), MessageType::kUnknown);
  for (std::string_view bad : {std::string_view(""),
                               std::string_view("\x0a\x05"
                                                "ab"),
                               std::string_view("\x1a\x00", 2)}) {
    EXPECT_EQ(MutableMessage::DecodeType(bad), MessageType::kUnknown);
  }
}

TEST(MutableMessageTest, LargeFieldsUseMultiByteLengths) {
  MutableMessage m(MessageType::kInsert, std::string(300000, 'x'));
  m.SetProperty("k", std::string(200, 'v'));
  const std::string bytes = m.Encode();
  EXPECT_EQ(bytes.size(), m.EncodedSize());
  auto back = MutableMessage::Decode(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, m);
}

// The hand-written encoder against protobuf at every varint length boundary of the payload,
// of an entry and of a key/value inside it.
TEST(MutableMessageTest, ProtobufIsByteIdenticalAcrossLengthBoundaries) {
  for (size_t n : {0, 1, 126, 127, 128, 16383, 16384, 2097152}) {
    MutableMessage m(MessageType::kInsert, std::string(n, 'p'));
    m.SetProperty(std::string(std::min<size_t>(n, 200), 'k'), std::string(n % 300, 'v'));
    m.set_timetick(TimeTick(n));
    Message pb;
    pb.set_payload(m.payload());
    for (const auto& [k, v] : m.properties()) (*pb.mutable_properties())[k] = v;
    EXPECT_EQ(DeterministicSerialize(pb), m.Encode()) << n;
    EXPECT_EQ(m.Encode().size(), m.EncodedSize()) << n;
  }
}

TEST(MutableMessageTest, AssignPropertyInsertsOrOverwrites) {
  MutableMessage m(MessageType::kInsert, "");
  m.AssignProperty("b", "1");
  m.AssignProperty("a", "x");
  m.AssignProperty("c", "");
  m.AssignProperty("b", std::string(100, 'y'));
  m.AssignProperty("b", "2");
  EXPECT_EQ(m.GetProperty("a"), "x");
  EXPECT_EQ(m.GetProperty("b"), "2");
  EXPECT_EQ(m.GetProperty("c"), "");
  MutableMessage same(MessageType::kInsert, "");
  same.SetProperty("c", "");
  same.SetProperty("a", "x");
  same.SetProperty("b", "2");
  EXPECT_EQ(m, same);
  EXPECT_EQ(m.Encode(), same.Encode());
}

TEST(MutableMessageTest, OursParsesWithProtobuf) {
  const MutableMessage m = Sample();
  Message pb;
  ASSERT_TRUE(pb.ParseFromString(m.Encode()));
  EXPECT_EQ(pb.payload(), m.payload());
  ASSERT_EQ(pb.properties_size(), static_cast<int>(m.properties().size()));
  for (const auto& [k, v] : m.properties()) {
    ASSERT_TRUE(pb.properties().contains(k)) << k;
    EXPECT_EQ(pb.properties().at(k), v);
  }
}

TEST(MutableMessageTest, ProtobufIsByteIdenticalToOurs) {
  const MutableMessage m = Sample();
  Message pb;
  pb.set_payload(m.payload());
  for (const auto& [k, v] : m.properties()) (*pb.mutable_properties())[k] = v;
  const std::string theirs = DeterministicSerialize(pb);
  EXPECT_EQ(theirs, m.Encode());
  auto ours = MutableMessage::Decode(theirs);
  ASSERT_TRUE(ours.ok()) << ours.status();
  EXPECT_EQ(*ours, m);

  // Empty payload: proto3 omits the field, so must we.
  Message no_payload;
  (*no_payload.mutable_properties())["a"] = "b";
  EXPECT_EQ(DeterministicSerialize(no_payload),
            MutableMessage::Decode(DeterministicSerialize(no_payload))->Encode());
}

TEST(MutableMessageTest, DecodeAcceptsWhatProtobufAllows) {
  // Properties before payload, entry value before key, missing key/value, explicit empty
  // payload: all legal protobuf encodings of the same message.
  const std::string bytes = std::string("\x12\x05\x12\x01v\x0a\x00", 7) +  // {"": "v"}
                            std::string("\x12\x03\x0a\x01k", 5) +          // {"k": ""}
                            std::string("\x0a\x00", 2);                    // payload ""
  auto m = MutableMessage::Decode(bytes);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->payload(), "");
  EXPECT_EQ(m->GetProperty(""), "v");
  EXPECT_EQ(m->GetProperty("k"), "");
  Message pb;
  ASSERT_TRUE(pb.ParseFromString(bytes));
  EXPECT_EQ(pb.properties().at(""), "v");
}

TEST(MutableMessageTest, DecodeRejectsMalformed) {
  const std::string good = Sample().Encode();
  const std::string entry_ab = std::string(
      "\x12\x06\x0a\x01"
      "a\x12\x01"
      "b",
      8);
  struct Case {
    const char* name;
    std::string bytes;
  };
  const Case cases[] = {
      {"truncated length", std::string("\x0a", 1)},
      {"length past end", std::string("\x0a\x05"
                                      "abc",
                                      5)},
      {"truncated tail", good.substr(0, good.size() - 1)},
      {"trailing garbage", good + std::string(1, '\0')},
      {"unknown field 3", good + std::string("\x1a\x00", 2)},
      {"varint wire type", std::string("\x08\x01", 2)},
      {"fixed64 wire type", std::string("\x09", 1) + std::string(8, '\0')},
      {"group wire type", std::string("\x0b\x0c", 2)},
      {"field 0", std::string("\x02\x00", 2)},
      {"multi-byte tag", std::string("\x8a\x00\x00", 3)},
      {"overlong length", std::string("\x0a\x81\x00"
                                      "a",
                                      4)},
      {"length > 64 bits", std::string("\x0a") + std::string(9, '\xff') + "\x7f"},
      {"11-byte varint", std::string("\x0a") + std::string(10, '\x80') + std::string(1, '\0')},
      {"repeated payload", std::string("\x0a\x01x\x0a\x01y", 6)},
      {"duplicate key", entry_ab + entry_ab},
      {"repeated entry key", std::string("\x12\x06\x0a\x01"
                                         "a\x0a\x01"
                                         "b",
                                         8)},
      {"unknown entry field", std::string("\x12\x03\x1a\x01"
                                          "a",
                                          5)},
      {"varint in entry", std::string("\x12\x02\x08\x01", 4)},
      {"truncated entry", std::string("\x12\x03\x0a\x05"
                                      "a",
                                      5)},
      {"non-UTF-8 key", std::string("\x12\x03\x0a\x01\xff", 5)},
      {"non-UTF-8 value", std::string("\x12\x06\x0a\x01k\x12\x01\xc3", 8)},
      {"surrogate in value", std::string("\x12\x08\x0a\x01k\x12\x03\xed\xa0\x80", 10)},
      {"overlong UTF-8", std::string("\x12\x07\x0a\x01k\x12\x02\xc0\xaf", 9)},
  };
  for (const Case& c : cases) {
    auto r = MutableMessage::Decode(c.bytes);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(GetStreamingCode(r.status()), StreamingCode::kInvalidArgument) << c.name;
  }
}

// EncodeTo(dst, stamp) must write exactly what Stamp then EncodeTo writes: random messages
// (with and without the stamped keys already set, keys sorting around them) and random stamps.
TEST(MutableMessageTest, EncodingWithAStampEqualsStampingThenEncoding) {
  std::mt19937_64 rng(11);
  const std::vector<std::string> keys = {"",   "_ik", "_l",  "_lc", "_lcs", "_lcz",
                                         "_t", "_tb", "_tc", "_td", "_tt",  "_tu",
                                         "_v", "_vc", "_wt", "_wu", "a",    "\xc3\xa9"};
  for (int round = 0; round < 2000; ++round) {
    MutableMessage m(MessageType::kInsert, std::string(rng() % 3 == 0 ? 0 : rng() % 300, 'p'));
    for (const std::string& k : keys) {
      if (rng() % 3 == 0) m.SetProperty(k, std::string(rng() % 20, 'v'));
    }
    AppendStamp stamp{.timetick = TimeTick(rng()), .term = Term(static_cast<int64_t>(rng() >> 1))};
    if (rng() % 2 == 0) stamp.last_confirmed = MessageId::Local(rng() % 100000);
    if (rng() % 2 == 0) {
      stamp.trace_context_size = 1 + rng() % AppendStamp::kMaxTraceContextText;
      for (size_t i = 0; i < stamp.trace_context_size; ++i) {
        stamp.trace_context[i] = static_cast<char>('A' + rng() % 26);
      }
    }
    std::string with_stamp = "prefix";
    m.EncodeTo(&with_stamp, stamp);
    const MutableMessage unstamped = m;
    MutableMessage stamped = m;
    stamped.Stamp(stamp);
    EXPECT_EQ(with_stamp, "prefix" + stamped.Encode()) << "round " << round;
    EXPECT_EQ(m, unstamped);
    auto decoded = MutableMessage::Decode(std::string_view(with_stamp).substr(6));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->timetick(), stamp.timetick);
    EXPECT_EQ(decoded->wal_term(), stamp.term);
    EXPECT_EQ(decoded->last_confirmed_is_self(), !stamp.last_confirmed.has_value());
    EXPECT_EQ(decoded->last_confirmed(), stamp.last_confirmed);
  }
}

// Reserved keys live in slots, the rest in a sorted map; to a caller they are one map. Random
// edits (every reserved key, keys sorting around them, values growing and shrinking so that
// slot values are rewritten in place, moved and compacted) against a std::map model.
TEST(MutableMessageTest, PropertiesBehaveAsOneMap) {
  std::mt19937_64 rng(7);
  const std::vector<std::string> keys = {"",    "A",    "_",     "_bh", "_h",  "_ik", "_ik0", "_l",
                                         "_lc", "_lcs", "_lcs0", "_np", "_rh", "_t",  "_tc",  "_tt",
                                         "_tx", "_u",   "_ur",   "_v",  "_vc", "_w",  "_wt",  "z"};
  for (int round = 0; round < 300; ++round) {
    MutableMessage m;
    std::map<std::string, std::string> model;
    for (int op = 0; op < 40; ++op) {
      const std::string& key = keys[rng() % keys.size()];
      const std::string value(rng() % 4 == 0 ? rng() % 200 : rng() % 8, 'a' + rng() % 26);
      switch (rng() % 4) {
        case 0:
          m.SetProperty(key, value);
          model[key] = value;
          break;
        case 1:
          m.AssignProperty(key, value);
          model[key] = value;
          break;
        case 2:
          m.EraseProperty(key);
          model.erase(key);
          break;
        default:  // a value copied from the message itself
          if (auto v = m.GetProperty(keys[rng() % keys.size()])) {
            model[key] = std::string(*v);
            m.AssignProperty(key, *v);
          }
      }
      for (const std::string& k : keys) {
        auto it = model.find(k);
        ASSERT_EQ(m.GetProperty(k),
                  it == model.end() ? std::nullopt : std::optional<std::string_view>(it->second))
            << "round " << round << " op " << op << " key '" << k << "'";
      }
    }
    const Properties all = m.properties();
    const std::map<std::string, std::string> all_as_map(all.begin(), all.end());
    ASSERT_EQ(all_as_map, model);
    EXPECT_EQ(m.type(), MessageType::kUnknown);  // values of letters never parse as a type
    Message pb;
    for (const auto& [k, v] : model) (*pb.mutable_properties())[k] = v;
    ASSERT_EQ(m.Encode(), DeterministicSerialize(pb)) << "round " << round;
    ASSERT_EQ(m.EncodedSize(), m.Encode().size());
    auto decoded = MutableMessage::Decode(m.Encode());
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(*decoded, m);
    MutableMessage copy = m;
    EXPECT_EQ(copy, m);
    MutableMessage moved = std::move(copy);
    EXPECT_EQ(moved, m);
    EXPECT_EQ(copy, MutableMessage());  // NOLINT(bugprone-use-after-move): left empty
    MutableMessage taken = m;
    MutableMessage rebuilt;
    rebuilt.SetProperties(taken.TakeProperties());
    EXPECT_EQ(rebuilt, m);
    EXPECT_EQ(taken, MutableMessage());
  }
}

TEST(MutableMessageTest, TypeFollowsTheTypeProperty) {
  MutableMessage m(MessageType::kInsert, "");
  EXPECT_EQ(m.type(), MessageType::kInsert);
  m.SetProperty("_t", "901");
  EXPECT_EQ(m.type(), MessageType::kCommitTxn);
  m.AssignProperty("_t", "1");
  EXPECT_EQ(m.type(), MessageType::kTimeTick);
  m.AssignProperty("_t", "01");
  EXPECT_EQ(m.type(), MessageType::kUnknown);
  m.AssignProperty("_t", "1");
  m.EraseProperty("_t");
  EXPECT_EQ(m.type(), MessageType::kUnknown);
  auto decoded = MutableMessage::Decode(MutableMessage(MessageType::kDelete, "x").Encode());
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->type(), MessageType::kDelete);
  MutableMessage with_all;
  with_all.SetProperties(MutableMessage(MessageType::kFlush, "").properties());
  EXPECT_EQ(with_all.type(), MessageType::kFlush);
}

TEST(ImmutableMessageTest, ResolvesFields) {
  MutableMessage m = Sample();
  const MessageId id = MessageId::Local(42);
  ImmutableMessage im(id, m);
  EXPECT_EQ(im.id(), id);
  EXPECT_EQ(im.type(), MessageType::kInsert);
  EXPECT_EQ(im.timetick(), TimeTick(123456789));
  EXPECT_EQ(im.vchannel(), "kf-dml_0_7v1");
  EXPECT_EQ(im.last_confirmed(), MessageId(WalKind::kObjectStore, 4, 5));
  EXPECT_EQ(im.message(), m);

  m.set_last_confirmed_self();
  EXPECT_EQ(ImmutableMessage(id, m).last_confirmed(), id);

  const ImmutableMessage bare(id, MutableMessage());
  EXPECT_EQ(bare.type(), MessageType::kUnknown);
  EXPECT_EQ(bare.timetick(), TimeTick(0));
  EXPECT_EQ(bare.vchannel(), "");
  EXPECT_FALSE(bare.last_confirmed().valid());

  ImmutableMessagePtr shared = std::make_shared<const ImmutableMessage>(id, Sample());
  EXPECT_EQ(shared->vchannel(), "kf-dml_0_7v1");
}

TEST(BuildersTest, SetTypeVChannelAndHeaders) {
  kingfisher::v1::InsertBatch batch;
  batch.add_pks(1);
  batch.set_dim(1);
  batch.add_vectors(0.5f);
  MutableMessage ins = NewInsertMessage("kf-dml_0_1v0", batch);
  EXPECT_EQ(ins.type(), MessageType::kInsert);
  EXPECT_EQ(ins.vchannel(), "kf-dml_0_1v0");
  EXPECT_EQ(ins.payload(), batch.SerializeAsString());

  kingfisher::v1::DeletePks pks;
  pks.add_pks(3);
  EXPECT_EQ(NewDeleteMessage("v", pks).type(), MessageType::kDelete);

  MutableMessage tt = NewTimeTickMessage(TimeTick(99));
  EXPECT_EQ(tt.type(), MessageType::kTimeTick);
  EXPECT_EQ(tt.vchannel(), "");
  EXPECT_EQ(tt.timetick(), TimeTick(99));

  MutableMessage begin = NewBeginTxnMessage("kf-dml_0_1v0", 10000);
  EXPECT_EQ(begin.type(), MessageType::kBeginTxn);
  ASSERT_TRUE(begin.txn());
  EXPECT_EQ(begin.txn()->keepalive_ms(), 10000);
  EXPECT_EQ(begin.txn()->txn_id(), 0);

  MutableMessage commit = NewCommitTxnMessage("kf-dml_0_1v0", TxnId(7));
  EXPECT_EQ(commit.type(), MessageType::kCommitTxn);
  EXPECT_EQ(commit.txn()->txn_id(), 7);
  MutableMessage rollback = NewRollbackTxnMessage("kf-dml_0_1v0", TxnId(8));
  EXPECT_EQ(rollback.type(), MessageType::kRollbackTxn);
  EXPECT_EQ(rollback.txn()->txn_id(), 8);

  kingfisher::v1::CollectionSchema schema;
  schema.set_name("c");
  MutableMessage create = NewCreateCollectionMessage("kf-dml_0_1v0", schema);
  EXPECT_EQ(create.type(), MessageType::kCreateCollection);
  EXPECT_EQ(create.payload(), schema.SerializeAsString());

  MutableMessage drop = NewDropCollectionMessage("kf-dml_0_1v0", 1);
  EXPECT_EQ(drop.type(), MessageType::kDropCollection);
  kingfisher::v1::DropCollection d;
  ASSERT_TRUE(d.ParseFromString(drop.payload()));
  EXPECT_EQ(d.collection_id(), 1);
}

}  // namespace
}  // namespace kf
