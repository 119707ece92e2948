// The functions of include/kingfisher/message.h, and ToMutableMessage.
#include "client/public_message.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "kingfisher/v1/message.pb.h"
#include "message/payload.h"
#include "message/properties.h"

namespace kf::client {

absl::StatusOr<MutableMessage> ToMutableMessage(kingfisher::Message message) {
  for (const auto& [key, value] : message.properties) {
    if (IsReservedKey(key)) {
      return StreamingError(StreamingCode::kInvalidArgument,
                            absl::StrCat("property key '", key,
                                         "' is reserved for the system (keys starting with '_'); "
                                         "nothing was sent"));
    }
  }
  MutableMessage out(message.type, std::move(message.payload));
  for (auto& [key, value] : message.properties.TakeEntries()) {
    out.SetProperty(std::move(key), std::move(value));
  }
  out.set_vchannel(std::move(message.vchannel));
  return out;
}

}  // namespace kf::client

namespace kingfisher {
namespace {

absl::Status WrongType(const ConsumedMessage& m, MessageType want) {
  return kf::StreamingError(
      kf::StreamingCode::kInvalidArgument,
      absl::StrCat("message ", m.id.ToText(), " is a ", kf::ToAbsl(MessageTypeName(m.type)),
                   ", not an ", kf::ToAbsl(MessageTypeName(want))));
}

}  // namespace

absl::StatusOr<Message> InsertMessage(std::string vchannel, const Rows& rows) {
  kingfisher::v1::InsertBatch batch;
  batch.set_collection_id(rows.collection_id);
  batch.set_partition(rows.partition);
  batch.set_dim(rows.dim);
  batch.mutable_pks()->Add(rows.pks.begin(), rows.pks.end());
  batch.mutable_vectors()->Add(rows.vectors.begin(), rows.vectors.end());
  for (const std::string& a : rows.attributes) batch.add_attributes(a);
  if (absl::Status bad = kf::CheckInsertBatch(batch); !bad.ok()) return bad;
  return Message{.type = MessageType::kInsert,
                 .vchannel = std::move(vchannel),
                 .payload = batch.SerializeAsString()};
}

absl::StatusOr<Message> DeleteMessage(std::string vchannel, const std::vector<int64_t>& pks) {
  if (pks.empty()) {
    return kf::StreamingError(kf::StreamingCode::kInvalidArgument, "Delete has no pks");
  }
  kingfisher::v1::DeletePks payload;
  payload.mutable_pks()->Add(pks.begin(), pks.end());
  return Message{.type = MessageType::kDelete,
                 .vchannel = std::move(vchannel),
                 .payload = payload.SerializeAsString()};
}

std::optional<TxnId> ConsumedMessage::txn_id() const {
  auto it = properties.find(kf::prop::kTxn);
  if (it == properties.end()) return std::nullopt;
  kf::MutableMessage m;
  m.SetProperty(it->first, it->second);
  auto txn = m.txn();
  if (!txn || txn->txn_id() == 0) return std::nullopt;
  return TxnId(txn->txn_id());
}

absl::StatusOr<Rows> ConsumedMessage::rows() const {
  if (type != MessageType::kInsert) return WrongType(*this, MessageType::kInsert);
  absl::StatusOr<kingfisher::v1::InsertBatch> batch = kf::DecodeInsertBatch(payload);
  if (!batch.ok()) return batch.status();
  Rows out;
  out.collection_id = batch->collection_id();
  out.partition = std::move(*batch->mutable_partition());
  out.dim = batch->dim();
  out.pks.assign(batch->pks().begin(), batch->pks().end());
  out.vectors.assign(batch->vectors().begin(), batch->vectors().end());
  for (std::string& a : *batch->mutable_attributes()) out.attributes.push_back(std::move(a));
  return out;
}

absl::StatusOr<std::vector<int64_t>> ConsumedMessage::deleted_pks() const {
  if (type != MessageType::kDelete) return WrongType(*this, MessageType::kDelete);
  absl::StatusOr<kingfisher::v1::DeletePks> pks = kf::DecodeDeletePks(payload);
  if (!pks.ok()) return pks.status();
  return std::vector<int64_t>(pks->pks().begin(), pks->pks().end());
}

}  // namespace kingfisher
