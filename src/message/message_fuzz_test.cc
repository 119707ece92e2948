// Runs the fuzz body over hand-made nasty inputs and deterministic mutations of valid
// encodings, so the invariants are checked on every CI run, not only under clang/libFuzzer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/testing/seed_mutations.h"
#include "google/protobuf/stubs/logging.h"
#include "message/builders.h"
#include "message/message.h"
#include "message/message_fuzz_body.h"

namespace kf {
namespace {

std::vector<std::string> Seeds() {
  kingfisher::v1::InsertBatch batch;
  batch.set_dim(2);
  batch.add_pks(1);
  batch.add_vectors(1);
  batch.add_vectors(2);
  batch.add_attributes("{\"a\":1}");
  kingfisher::v1::CollectionSchema schema;
  schema.set_name("c");
  schema.set_dim(4);
  schema.set_metric(kingfisher::v1::IP);
  schema.set_shards(2);
  kingfisher::v1::DeletePks pks;
  pks.add_pks(-1);

  MutableMessage full = NewInsertMessage("kf-dml_0_7v0", batch);
  full.set_timetick(TimeTick(UINT64_MAX));
  full.set_wal_term(Term(INT64_MAX));
  full.set_last_confirmed(MessageId(WalKind::kQuorum, 1, 2));
  full.set_idempotency_key("p:1");
  full.SetProperty("x", "\xf4\x8f\xbf\xbf");  // U+10FFFF
  MutableMessage self = NewCommitTxnMessage("kf-dml_0_raw", TxnId(-1));
  self.set_last_confirmed_self();

  return {
      "",
      full.Encode(),
      self.Encode(),
      NewTimeTickMessage(TimeTick(1)).Encode(),
      batch.SerializeAsString(),
      schema.SerializeAsString(),
      pks.SerializeAsString(),
      MessageId::Local(7).Encode(),
      MessageId(WalKind::kObjectStore, 300, 1).Encode(),
      "local:42",
      "os:3.17",
      "q:0.0",
      "kf-dml_0_7v0",
      "kf-dml_0_042v1",
      "kf-dml_3_9223372036854775807v63",
      "kf-dml_3_9223372036854775808v0",
      "kf-dml_0_7v64",
      "a-dml_1_b-dml_2_c",
      std::string("\x0a\xff\xff\xff\xff\x0f", 6),             // 4 GiB payload length
      std::string("\x0a") + std::string(9, '\xff') + "\x01",  // 2^64-1 length
      std::string("\x12\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 11),
      std::string("\x12\x04\x0a\x00\x12\x00\x12\x04\x0a\x00\x12\x00", 12),  // dup "" key
      std::string("\x12\x02\x0a\x00", 4),
      std::string("\x12\x00", 2),  // entry with neither key nor value
      std::string("\x22\x00", 2),
      std::string(1, '\0'),
      std::string(1000, '\x12'),
      std::string("\x03\x00\x00", 3),
      std::string("\x01\x00\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 12),
      "local:18446744073709551615",
      "local:18446744073709551616",
      "os:18446744073709551615.18446744073709551615",
  };
}

TEST(MessageFuzzTest, NastyInputs) {
  google::protobuf::LogSilencer quiet;  // protobuf logs each non-UTF-8 string it rejects
  for (const std::string& s : Seeds()) RunMessageFuzzInput(s);
}

TEST(MessageFuzzTest, DeterministicMutations) {
  google::protobuf::LogSilencer quiet;
  kf::testing::ForEachMutation(Seeds(), /*rng_seed=*/20240611, 20000, /*alphabet=*/"",
                               [](const std::string& s) { RunMessageFuzzInput(s); });
}

}  // namespace
}  // namespace kf
