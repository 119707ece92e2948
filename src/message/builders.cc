#include "message/builders.h"

#include <utility>

namespace kf {
namespace {
MutableMessage New(MessageType type, std::string vchannel, std::string payload) {
  MutableMessage m(type, std::move(payload));
  m.set_vchannel(std::move(vchannel));
  return m;
}

MutableMessage NewTxnControl(MessageType type, std::string vchannel, int64_t txn_id,
                             int64_t keepalive_ms) {
  MutableMessage m = New(type, std::move(vchannel), "");
  kingfisher::v1::TxnContext txn;
  txn.set_txn_id(txn_id);
  txn.set_keepalive_ms(keepalive_ms);
  m.set_txn(txn);
  return m;
}
}  // namespace

MutableMessage NewInsertMessage(std::string vchannel, const kingfisher::v1::InsertBatch& batch) {
  return New(MessageType::kInsert, std::move(vchannel), batch.SerializeAsString());
}

MutableMessage NewDeleteMessage(std::string vchannel, const kingfisher::v1::DeletePks& pks) {
  return New(MessageType::kDelete, std::move(vchannel), pks.SerializeAsString());
}

MutableMessage NewCreateSegmentMessage(std::string vchannel, int64_t collection_id,
                                       std::string partition) {
  kingfisher::v1::PartitionPayload p;
  p.set_collection_id(collection_id);
  p.set_partition(std::move(partition));
  return New(MessageType::kCreateSegment, std::move(vchannel), p.SerializeAsString());
}

MutableMessage NewTimeTickMessage(TimeTick t) {
  MutableMessage m(MessageType::kTimeTick, "");
  m.set_timetick(t);
  return m;
}

MutableMessage NewBeginTxnMessage(std::string vchannel, int64_t keepalive_ms) {
  return NewTxnControl(MessageType::kBeginTxn, std::move(vchannel), 0, keepalive_ms);
}

MutableMessage NewCommitTxnMessage(std::string vchannel, TxnId txn) {
  return NewTxnControl(MessageType::kCommitTxn, std::move(vchannel), txn.value(), 0);
}

MutableMessage NewRollbackTxnMessage(std::string vchannel, TxnId txn) {
  return NewTxnControl(MessageType::kRollbackTxn, std::move(vchannel), txn.value(), 0);
}

MutableMessage NewCreateCollectionMessage(std::string vchannel,
                                          const kingfisher::v1::CollectionSchema& schema) {
  return New(MessageType::kCreateCollection, std::move(vchannel), schema.SerializeAsString());
}

MutableMessage NewDropCollectionMessage(std::string vchannel, int64_t collection_id) {
  kingfisher::v1::DropCollection drop;
  drop.set_collection_id(collection_id);
  return New(MessageType::kDropCollection, std::move(vchannel), drop.SerializeAsString());
}

}  // namespace kf
