#include "rpc/consumed_batch_encoder.h"

#include <memory>
#include <string>
#include <vector>

#include "grpcpp/support/proto_buffer_reader.h"
#include "gtest/gtest.h"
#include "kingfisher/v1/streaming.pb.h"
#include "message/builders.h"
#include "rpc/message_convert.h"
#include "wal/txn/txn_message.h"

namespace kf::rpc {
namespace {

ImmutableMessagePtr Stored(MutableMessage m, uint64_t tt) {
  m.set_timetick(TimeTick(tt));
  m.set_last_confirmed_self();
  return std::make_shared<const ImmutableMessage>(MessageId::Local(tt), std::move(m));
}

ImmutableMessagePtr Insert(uint64_t tt, size_t payload_bytes) {
  MutableMessage m(MessageType::kInsert, std::string(payload_bytes, static_cast<char>('a' + tt)));
  m.set_vchannel("v1");
  return Stored(std::move(m), tt);
}

kingfisher::v1::TxnContext Ctx(int64_t id) {
  kingfisher::v1::TxnContext c;
  c.set_txn_id(id);
  c.set_keepalive_ms(1000);
  return c;
}

ImmutableMessagePtr Txn(uint64_t tt) {
  MutableMessage begin = NewBeginTxnMessage("v1", 1000);
  begin.set_txn(Ctx(static_cast<int64_t>(tt)));
  MutableMessage body(MessageType::kInsert, std::string(2000, 'b'));
  body.set_vchannel("v1");
  body.set_txn(Ctx(static_cast<int64_t>(tt)));
  return wal::TxnMessage::Assemble({Stored(std::move(begin), tt), Stored(std::move(body), tt + 1),
                                    Stored(NewCommitTxnMessage("v1", TxnId(tt)), tt + 2)});
}

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// What protobuf serializes for the same batch (the Consume RPC's message types).
std::string Expected(const std::vector<ImmutableMessagePtr>& batch) {
  kingfisher::v1::ConsumeResponse response;
  response.mutable_batch();  // set even when empty
  for (const ImmutableMessagePtr& m : batch) {
    ConsumedToProto(*m, response.mutable_batch()->add_messages());
  }
  return response.SerializeAsString();
}

TEST(ConsumedBatchEncoderTest, BytesAreProtobufsForSmallLargeAndTxnMessages) {
  const std::vector<ImmutableMessagePtr> batch = {Insert(1, 10), Insert(2, 4096), Txn(3),
                                                  Insert(6, 0), Insert(7, 100000)};
  const grpc::ByteBuffer buffer = EncodeConsumedBatch(batch);
  EXPECT_EQ(Flatten(buffer), Expected(batch));

  grpc::ByteBuffer copy(buffer);
  grpc::ProtoBufferReader reader(&copy);
  kingfisher::v1::ConsumeResponse parsed;
  ASSERT_TRUE(parsed.ParseFromZeroCopyStream(&reader));
  ASSERT_EQ(parsed.batch().messages_size(), 5);
  EXPECT_EQ(parsed.batch().messages(2).inner_size(), 3);
}

TEST(ConsumedBatchEncoderTest, OneMessageIsEncodedOnceForEveryConsumer) {
  const ImmutableMessagePtr m = Insert(1, 4096);
  const std::string_view first = m->encoded();
  EncodeConsumedBatch({m});
  EncodeConsumedBatch({m});
  EXPECT_EQ(m->encoded().data(), first.data());  // the same bytes, not a new encoding
  EXPECT_EQ(first, m->message().Encode());
}

TEST(ConsumedBatchEncoderTest, BufferKeepsTheMessagesItSharesAlive) {
  grpc::ByteBuffer buffer;
  std::string expected;
  {
    std::vector<ImmutableMessagePtr> batch = {Insert(1, 8192)};
    expected = Expected(batch);
    buffer = EncodeConsumedBatch(batch);
  }  // the batch's last reference outside the buffer is gone
  EXPECT_EQ(Flatten(buffer), expected);
}

TEST(ConsumedBatchEncoderTest, EmptyBatch) {
  EXPECT_EQ(Flatten(EncodeConsumedBatch({})), Expected({}));
}

}  // namespace
}  // namespace kf::rpc
