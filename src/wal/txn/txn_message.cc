#include "wal/txn/txn_message.h"

#include <string>
#include <utility>

#include "message/properties.h"

namespace kf::wal {

TxnMessage::TxnMessage(Passkey, MutableMessage txn, MessageId id,
                       std::vector<ImmutableMessagePtr> inner)
    : ImmutableMessage(std::move(id), std::move(txn)), inner_(std::move(inner)) {}

std::shared_ptr<const TxnMessage> TxnMessage::Assemble(std::vector<ImmutableMessagePtr> inner) {
  const ImmutableMessage& commit = *inner.back();
  MutableMessage txn = commit.message();
  txn.SetProperty(std::string(prop::kType), std::to_string(static_cast<int>(MessageType::kTxn)));
  return std::make_shared<const TxnMessage>(Passkey{}, std::move(txn), commit.id(),
                                            std::move(inner));
}

const TxnMessage* AsTxnMessage(const ImmutableMessage& m) {
  if (m.type() != MessageType::kTxn) return nullptr;
  return static_cast<const TxnMessage*>(&m);
}

}  // namespace kf::wal
