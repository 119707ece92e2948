#include "rpc/consumed_batch_encoder.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "common/coding.h"
#include "kingfisher/v1/streaming.pb.h"
#include "rpc/message_convert.h"
#include "wal/txn/txn_message.h"

namespace kf::rpc {
namespace {

// Field numbers of streaming.proto: ConsumeResponse.batch, ConsumedBatch.messages,
// ConsumedMessage.message_id and .message; all length-delimited.
constexpr int kResponseBatch = 4;
constexpr int kBatchMessages = 1;
constexpr int kMessageId = 1;
constexpr int kMessageBody = 2;

// Below this a message's encoding is copied next to its header: a shared slice costs a
// reference count and an allocation, more than copying a few hundred bytes.
constexpr size_t kShareFrom = 512;

// The bytes PutVarint64 writes for `v`.
size_t VarintSize(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

// Tag and length of a length-delimited field (all our field numbers are < 16: one byte).
void PutLengthPrefix(int field, size_t len, std::string* out) {
  out->push_back(static_cast<char>((field << 3) | 2));
  PutVarint64(out, len);
}

size_t BytesFieldSize(size_t len) { return len == 0 ? 0 : 1 + VarintSize(len) + len; }

void DeleteString(void* s) { delete static_cast<std::string*>(s); }
void DeleteMessageRef(void* ref) { delete static_cast<ImmutableMessagePtr*>(ref); }

}  // namespace

grpc::ByteBuffer EncodeConsumedBatch(const std::vector<ImmutableMessagePtr>& batch) {
  // Each message is a ConsumedMessage: a txn message (with its inner messages) is serialized
  // whole by protobuf, any other is its id plus its shared encoding.
  struct Item {
    std::string id;          // plain messages
    std::string_view body;   // plain messages: m->encoded()
    std::string serialized;  // txn messages: the whole ConsumedMessage
    size_t size = 0;         // the ConsumedMessage's encoded size
  };
  std::vector<Item> items(batch.size());
  size_t batch_size = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const ImmutableMessage& m = *batch[i];
    Item& item = items[i];
    if (wal::AsTxnMessage(m) != nullptr) {
      kingfisher::v1::ConsumedMessage proto;
      ConsumedToProto(m, &proto);
      proto.SerializeToString(&item.serialized);
      item.size = item.serialized.size();
    } else {
      item.id = m.id().Encode();
      item.body = m.encoded();
      item.size = BytesFieldSize(item.id.size()) + BytesFieldSize(item.body.size());
    }
    batch_size += 1 + VarintSize(item.size) + item.size;
  }

  // The headers (and whatever is copied) go into one string; the shared encodings are slices
  // of their own between its pieces. `cuts` marks where a shared slice follows.
  auto* head = new std::string;
  head->reserve(16 + batch.size() * 32);
  PutLengthPrefix(kResponseBatch, batch_size, head);
  std::vector<std::pair<size_t, size_t>> cuts;  // (end of head piece, index of shared message)
  for (size_t i = 0; i < batch.size(); ++i) {
    const Item& item = items[i];
    PutLengthPrefix(kBatchMessages, item.size, head);
    if (!item.serialized.empty()) {
      head->append(item.serialized);
      continue;
    }
    if (!item.id.empty()) {
      PutLengthPrefix(kMessageId, item.id.size(), head);
      head->append(item.id);
    }
    if (item.body.empty()) continue;
    PutLengthPrefix(kMessageBody, item.body.size(), head);
    if (item.body.size() < kShareFrom) {
      head->append(item.body);
    } else {
      cuts.emplace_back(head->size(), i);
    }
  }

  grpc::Slice whole(head->data(), head->size(), DeleteString, head);
  std::vector<grpc::Slice> slices;
  slices.reserve(2 * cuts.size() + 1);
  size_t from = 0;
  for (const auto& [to, i] : cuts) {
    if (to > from) slices.push_back(whole.sub(from, to));
    const std::string_view body = items[i].body;
    slices.emplace_back(const_cast<char*>(body.data()), body.size(), DeleteMessageRef,
                        new ImmutableMessagePtr(batch[i]));
    from = to;
  }
  if (head->size() > from) slices.push_back(whole.sub(from, head->size()));
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace kf::rpc
