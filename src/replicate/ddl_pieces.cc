#include "replicate/ddl_pieces.h"

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace kf::replicate {

using kingfisher::v1::ReplicatedDdlPiece;

std::string DdlPieces::Key(const ReplicatedDdlPiece& piece) const {
  return keys_.replicated_ddl(piece.source_cluster_id(), piece.source_broadcast_id(),
                              absl::StrCat(piece.index()));
}

absl::Status DdlPieces::Offer(const ReplicatedDdlPiece& piece) const {
  const std::string done =
      keys_.replicated_ddl(piece.source_cluster_id(), piece.source_broadcast_id(), "done");
  absl::StatusOr<meta::TxnResult> txn = store_->Txn(
      {meta::Compare::Absent(done)}, {meta::Op::Put(Key(piece), piece.SerializeAsString())}, {},
      absl::Now() + call_timeout_);
  return txn.status();
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

absl::Status DdlPieces::Resolve(const wal::Wal& wal) const {
  absl::StatusOr<meta::RangeResult> range =
      store_->Range(keys_.replicated_ddl_prefix(), absl::Now() + call_timeout_);
  if (!range.ok()) return range.status();
  std::optional<kingfisher::v1::WalReplicateState> state;
  for (const meta::KeyValue& kv : range->kvs) {
    if (kv.key.ends_with("/done")) continue;
    ReplicatedDdlPiece piece;
    if (!piece.ParseFromString(kv.value)) {
      return absl::DataLossError(absl::StrCat("metadata key ", kv.key, ": not a DDL piece"));
    }
    if (piece.landed() || piece.pchannel() != wal.pchannel()) continue;
    if (!state.has_value()) state = wal.replicate_state();
    bool covered = false;
    for (const kingfisher::v1::ReplicateCheckpoint& c : state->checkpoints()) {
      covered = covered || (c.cluster_id() == piece.source_cluster_id() &&
                            c.time_tick() >= piece.source_time_tick());
    }
    if (!covered) continue;  // not appended yet: its stream offers it again
    piece.set_landed(true);
    absl::StatusOr<meta::TxnResult> txn = store_->Txn(
        {meta::Compare::ModRevisionIs(kv.key, kv.mod_revision)},
        {meta::Op::Put(kv.key, piece.SerializeAsString())}, {}, absl::Now() + call_timeout_);
    if (!txn.ok()) return txn.status();
    spdlog::info("replicate: DDL copy {} found in the log of {}; marked landed", kv.key,
                 wal.pchannel());
  }
  return absl::OkStatus();
}

}  // namespace kf::replicate
