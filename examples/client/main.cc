// kingfisher_example: what an application does with the Kingfisher client library — append,
// read back, a transaction, a collection insert — using nothing but the installed package
// (<kingfisher/*.h>, Kingfisher::client).
//
// Usage: kingfisher_example HOST:PORT
// Prints one line per step and "ok" at the end; exits 1 with the error on the first failure.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kingfisher/client.h"

namespace {

using kingfisher::Clock;

[[noreturn]] void Fail(const std::string& step, const absl::Status& status) {
  std::fprintf(stderr, "%s: %s\n", step.c_str(), status.ToString().c_str());
  std::exit(1);
}

// The next message of `consumer` that is not a TimeTick (those advance the reader's
// watermark; an application usually skips them).
kingfisher::ConsumedMessage NextData(kingfisher::Consumer& consumer) {
  for (;;) {
    auto m = consumer.Next(Clock::now() + std::chrono::seconds(30));
    if (!m.ok()) Fail("consume", m.status());
    if (m->type != kingfisher::MessageType::kTimeTick) return *std::move(m);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s HOST:PORT\n", argv[0]);
    return 2;
  }
  auto client = kingfisher::Client::Connect({.endpoint = argv[1]});
  if (!client.ok()) Fail("connect", client.status());
  auto producer = (*client)->CreateProducer();
  if (!producer.ok()) Fail("producer", producer.status());
  const std::string suffix = std::to_string(std::random_device{}() % 1000000);

  // 1. Three messages on a raw vchannel (a plain log), each acknowledged once durable.
  const std::string vchannel = "kf-dml_0_example" + suffix;
  std::vector<kingfisher::AppendResult> acks;
  for (int i = 0; i < 3; ++i) {
    kingfisher::Message m{.type = kingfisher::MessageType::kInsert,
                          .vchannel = vchannel,
                          .payload = "event-" + std::to_string(i)};
    m.properties.insert_or_assign("source", "example");
    auto ack = (*producer)->AppendSync(std::move(m));
    if (!ack.ok()) Fail("append", ack.status());
    acks.push_back(*ack);
  }
  std::printf("appended 3 messages, first id %s\n", acks[0].id.ToText().c_str());

  // 2. Read them back from the first one, in order.
  auto consumer = (*client)->CreateConsumer(
      {.vchannel = vchannel, .policy = kingfisher::DeliverPolicy::StartFrom(acks[0].id)});
  if (!consumer.ok()) Fail("consumer", consumer.status());
  for (int i = 0; i < 3; ++i) {
    kingfisher::ConsumedMessage m = NextData(**consumer);
    if (m.id != acks[i].id || m.payload != "event-" + std::to_string(i) ||
        m.properties.at("source") != "example") {
      Fail("consume", absl::DataLossError("message " + std::to_string(i) + " differs"));
    }
  }
  std::printf("consumed 3 messages in order\n");

  // 3. A transaction: consumers see both bodies at once, as one Txn message, at the commit.
  auto txn = (*producer)->BeginTxn(vchannel);
  if (!txn.ok()) Fail("begin", txn.status());
  for (const char* body : {"debit", "credit"}) {
    auto ack = (*txn)->AppendSync(
        {.type = kingfisher::MessageType::kInsert, .vchannel = vchannel, .payload = body});
    if (!ack.ok()) Fail("txn body", ack.status());
  }
  auto commit = (*txn)->Commit();
  if (!commit.ok()) Fail("commit", commit.status());
  kingfisher::ConsumedMessage txn_message = NextData(**consumer);
  if (txn_message.type != kingfisher::MessageType::kTxn || txn_message.messages.size() != 4) {
    Fail("consume txn", absl::DataLossError("not a Txn of Begin, 2 bodies and Commit"));
  }
  std::printf("transaction %lld committed, consumed as one Txn of %zu messages\n",
              static_cast<long long>(commit->txn_id->value()), txn_message.messages.size());

  // 4. A collection of 4-dim vectors in 2 shards; rows are routed to shards by pk.
  auto collection = (*client)->CreateCollection(
      {.name = "example" + suffix, .dim = 4, .metric = "COSINE", .shards = 2});
  if (!collection.ok()) Fail("create collection", collection.status());
  auto pks = (*client)->AllocateIds(8);
  if (!pks.ok()) Fail("allocate ids", pks.status());
  std::vector<float> vectors(pks->size() * 4);
  for (size_t i = 0; i < vectors.size(); ++i) vectors[i] = static_cast<float>(i % 7) / 7.0f;
  auto inserts = kingfisher::InsertMessages(*collection, *pks, vectors);
  if (!inserts.ok()) Fail("insert messages", inserts.status());
  // One message per shard that got rows; read each shard's back.
  size_t rows = 0;
  for (kingfisher::Message& m : *inserts) {
    const std::string shard = m.vchannel;
    auto ack = (*producer)->AppendSync(std::move(m));
    if (!ack.ok()) Fail("insert", ack.status());
    auto reader = (*client)->CreateConsumer(
        {.vchannel = shard, .policy = kingfisher::DeliverPolicy::StartFrom(ack->id)});
    if (!reader.ok()) Fail("consumer", reader.status());
    auto inserted = NextData(**reader).rows();
    if (!inserted.ok()) Fail("rows", inserted.status());
    rows += inserted->pks.size();
  }
  std::printf("inserted %zu rows into collection %s (%zu shards)\n", rows, collection->name.c_str(),
              collection->vchannels.size());
  if (auto dropped = (*client)->DropCollection(collection->name); !dropped.ok()) {
    Fail("drop collection", dropped);
  }

  (*producer)->Close();
  std::printf("ok\n");
  return 0;
}
