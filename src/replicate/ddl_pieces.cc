#include "replicate/ddl_pieces.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "message/message.h"
#include "message/payload.h"
#include "spdlog/spdlog.h"

namespace kf::replicate {

using kingfisher::v1::ReplicatedDdlPiece;

std::string DdlPieces::Key(const ReplicatedDdlPiece& piece) const {
  return keys_.replicated_ddl(piece.source_cluster_id(), piece.source_broadcast_id(),
                              piece.index());
}

absl::Status DdlPieces::Offer(const ReplicatedDdlPiece& piece) const {
  const std::string done =
      keys_.replicated_ddl_done(piece.source_cluster_id(), piece.source_broadcast_id());
  uint64_t collection_id = 0;  // a CreateCollection's
  if (absl::StatusOr<MutableMessage> m = MutableMessage::Decode(piece.message());
      m.ok() && m->type() == MessageType::kCreateCollection) {
    absl::StatusOr<kingfisher::v1::CollectionSchema> schema = DecodeCollectionSchema(m->payload());
    if (!schema.ok()) return schema.status();
    collection_id = static_cast<uint64_t>(schema->collection_id());
  }
  const std::string counter = keys_.next_collection_id();
  while (true) {
    std::vector<meta::Compare> compares = {meta::Compare::Absent(done)};
    std::vector<meta::Op> ops = {meta::Op::Put(Key(piece), piece.SerializeAsString())};
    if (collection_id > 0) {
      absl::StatusOr<meta::GetResult> got = store_->Get(counter, absl::Now() + call_timeout_);
      uint64_t reserved = 0;
      if (got.ok() && !absl::SimpleAtoi(got->kv.value, &reserved)) {
        return absl::DataLossError(absl::StrCat("metadata key ", counter, ": not a counter"));
      }
      if (!got.ok() && !absl::IsNotFound(got.status())) return got.status();
      compares.push_back(
          meta::Compare::ModRevisionIs(counter, got.ok() ? got->kv.mod_revision : 0));
      if (reserved < collection_id)
        ops.push_back(meta::Op::Put(counter, absl::StrCat(collection_id)));
    }
    absl::StatusOr<meta::TxnResult> txn =
        store_->Txn(compares, ops, {meta::Op::Get(done)}, absl::Now() + call_timeout_);
    if (!txn.ok()) return txn.status();
    // Failed: applied already (done), or the counter moved meanwhile (read it again).
    if (txn->succeeded || !txn->results.at(0).kvs.empty()) return absl::OkStatus();
  }
}

absl::Status DdlPieces::MarkLanded(const ReplicatedDdlPiece& piece) const {
  ReplicatedDdlPiece landed = piece;
  landed.set_landed(true);
  const std::string key = Key(piece);
  absl::StatusOr<meta::TxnResult> txn =
      store_->Txn({meta::Compare::Exists(key)}, {meta::Op::Put(key, landed.SerializeAsString())},
                  {}, absl::Now() + call_timeout_);
  return txn.status();
}

bool DdlPieces::InLog(const wal::Wal& wal, const ReplicatedDdlPiece& piece) {
  const kingfisher::v1::WalReplicateState state = wal.replicate_state();
  for (const kingfisher::v1::ReplicateCheckpoint& c : state.checkpoints()) {
    if (c.cluster_id() == piece.source_cluster_id() && c.time_tick() >= piece.source_time_tick()) {
      return true;
    }
  }
  return false;
}

absl::Status DdlPieces::Resolve(const std::vector<std::shared_ptr<wal::Wal>>& wals) const {
  absl::StatusOr<meta::RangeResult> range =
      store_->Range(keys_.replicated_ddl_prefix(), absl::Now() + call_timeout_);
  if (!range.ok()) return range.status();
  for (const meta::KeyValue& kv : range->kvs) {
    if (kv.key.ends_with("/done")) continue;  // the older layout's marker (ReplicatedDdl moves it)
    ReplicatedDdlPiece piece;
    if (!piece.ParseFromString(kv.value)) {
      return absl::DataLossError(absl::StrCat("metadata key ", kv.key, ": not a DDL piece"));
    }
    if (piece.landed()) continue;
    for (const std::shared_ptr<wal::Wal>& wal : wals) {
      if (wal->pchannel() != piece.pchannel()) continue;
      if (!InLog(*wal, piece)) break;  // not appended yet: its stream offers it again
      piece.set_landed(true);
      absl::StatusOr<meta::TxnResult> txn = store_->Txn(
          {meta::Compare::ModRevisionIs(kv.key, kv.mod_revision)},
          {meta::Op::Put(kv.key, piece.SerializeAsString())}, {}, absl::Now() + call_timeout_);
      if (!txn.ok()) return txn.status();
      if (txn->succeeded) {
        spdlog::info("replicate: DDL copy {} found in the log of {}; marked landed", kv.key,
                     wal->pchannel());
      }
      break;
    }
  }
  return absl::OkStatus();
}

}  // namespace kf::replicate
