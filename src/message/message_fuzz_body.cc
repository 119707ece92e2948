#include "message/message_fuzz_body.h"

#include <climits>
#include <cstdio>
#include <cstdlib>

#include "kingfisher/v1/message.pb.h"
#include "message/message.h"
#include "message/payload.h"
#include "message/validate.h"

namespace kf {
namespace {

// Not assert(): must stay active in release builds, where the fuzzer may run.
#define KF_FUZZ_CHECK(cond)                                                                  \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)

void CheckMessage(std::string_view data) {
  auto m = MutableMessage::Decode(data);
  // Decoding into the bytes' own storage reads the same message, or fails the same way.
  auto owned = MutableMessage::DecodeOwned(std::string(data));
  KF_FUZZ_CHECK(owned.ok() == m.ok());
  KF_FUZZ_CHECK(owned.ok() ? *owned == *m : owned.status() == m.status());
  kingfisher::v1::Message pb;
  const bool pb_ok =
      data.size() <= INT_MAX && pb.ParseFromArray(data.data(), static_cast<int>(data.size()));
  if (!m.ok()) {
    KF_FUZZ_CHECK(m.status().code() == absl::StatusCode::kInvalidArgument);
    return;
  }
  // Our grammar is a subset of protobuf's, and we read the same content.
  KF_FUZZ_CHECK(pb_ok);
  KF_FUZZ_CHECK(pb.payload() == m->payload());
  KF_FUZZ_CHECK(static_cast<size_t>(pb.properties_size()) == m->properties().size());
  for (const auto& [k, v] : m->properties()) {
    auto it = pb.properties().find(k);
    KF_FUZZ_CHECK(it != pb.properties().end() && it->second == v);
  }

  const std::string encoded = m->Encode();
  KF_FUZZ_CHECK(encoded.size() == m->EncodedSize());
  auto again = MutableMessage::Decode(encoded);
  KF_FUZZ_CHECK(again.ok());
  KF_FUZZ_CHECK(*again == *m);
  KF_FUZZ_CHECK(again->Encode() == encoded);  // the encoding is canonical

  // Accessors and validation must cope with any property values.
  (void)m->type();
  (void)m->timetick();
  (void)m->wal_term();
  (void)m->last_confirmed();
  (void)m->txn();
  (void)m->broadcast_header();
  (void)m->replicate_header();
  const MessageType peeked = MutableMessage::DecodeType(data);
  KF_FUZZ_CHECK(peeked == m->type());
  const absl::Status valid = ValidateProducedMessage(*m);
  KF_FUZZ_CHECK(valid.ok() || valid.code() == absl::StatusCode::kInvalidArgument);
  const ImmutableMessage im(MessageId::Local(1), *std::move(m));
  KF_FUZZ_CHECK(im.type() == im.message().type());
  if (im.message().last_confirmed_is_self()) KF_FUZZ_CHECK(im.last_confirmed() == im.id());
}

void CheckMessageId(std::string_view data) {
  if (auto id = MessageId::Decode(data); id.ok()) {
    auto again = MessageId::Decode(id->Encode());
    KF_FUZZ_CHECK(again.ok() && *again == *id);
    auto text = MessageId::FromText(id->ToText());
    KF_FUZZ_CHECK(text.ok() && *text == *id);
  }
  if (auto id = MessageId::FromText(data); id.ok()) {
    KF_FUZZ_CHECK(id->ToText() == data);  // only canonical text is accepted
    auto bytes = MessageId::Decode(id->Encode());
    KF_FUZZ_CHECK(bytes.ok() && *bytes == *id);
  }
}

void CheckPayloads(std::string_view data) {
  if (auto b = DecodeInsertBatch(data); b.ok()) {
    KF_FUZZ_CHECK(b->pks_size() > 0 && b->dim() > 0);
    KF_FUZZ_CHECK(static_cast<uint64_t>(b->vectors_size()) ==
                  static_cast<uint64_t>(b->pks_size()) * b->dim());
    KF_FUZZ_CHECK(b->attributes_size() == 0 || b->attributes_size() == b->pks_size());
  }
  if (auto d = DecodeDeletePks(data); d.ok()) KF_FUZZ_CHECK(d->pks_size() > 0);
  if (auto s = DecodeCollectionSchema(data); s.ok()) {
    KF_FUZZ_CHECK(!s->name().empty() && s->dim() >= 1 && s->dim() <= kMaxDim);
    KF_FUZZ_CHECK(s->shards() >= 1 && s->shards() <= kMaxShards);
  }
  (void)DecodeDropCollection(data);
  (void)DecodePartition(data);
  // The WAL's header peek reads what protobuf reads, on everything that decodes.
  auto peek = PeekInsertBatch(data);
  KF_FUZZ_CHECK(peek.ok() || peek.status().code() == absl::StatusCode::kInvalidArgument);
  kingfisher::v1::InsertBatch pb;
  if (data.size() <= INT_MAX && pb.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    KF_FUZZ_CHECK(peek.ok());
    KF_FUZZ_CHECK(peek->collection_id == pb.collection_id() && peek->dim == pb.dim() &&
                  peek->partition == pb.partition());
  }
}

void CheckVChannel(std::string_view data) {
  auto p = PChannelOfVChannel(data);
  auto parsed = ParseVChannel(data);
  KF_FUZZ_CHECK(parsed.ok() || parsed.status().code() == absl::StatusCode::kInvalidArgument);
  KF_FUZZ_CHECK(IsCollectionVChannel(data) == (parsed.ok() && parsed->has_value()));
  if (!p.ok()) {
    KF_FUZZ_CHECK(!parsed.ok());
    return;
  }
  KF_FUZZ_CHECK(p->size() + 1 < data.size() && data.substr(0, p->size()) == *p);
  KF_FUZZ_CHECK(data[p->size()] == '_');
  if (parsed.ok() && parsed->has_value()) {
    // Canonical: the parsed shard names exactly this vchannel.
    const CollectionVChannel& vc = **parsed;
    KF_FUZZ_CHECK(vc.collection_id >= 1 && vc.shard < kMaxShards);
    KF_FUZZ_CHECK(*p + "_" + std::to_string(vc.collection_id) + "v" + std::to_string(vc.shard) ==
                  data);
  }
}

}  // namespace

void RunMessageFuzzInput(std::string_view data) {
  CheckMessage(data);
  CheckMessageId(data);
  CheckPayloads(data);
  CheckVChannel(data);
}

}  // namespace kf
