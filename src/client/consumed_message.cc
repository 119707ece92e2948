#include "kingfisher/consumer.h"
#include "message/properties.h"

namespace kingfisher {

std::optional<TxnId> ConsumedMessage::txn_id() const {
  auto it = properties.find(kf::prop::kTxn);
  if (it == properties.end()) return std::nullopt;
  kf::MutableMessage m;
  m.SetProperty(it->first, it->second);
  auto txn = m.txn();
  if (!txn || txn->txn_id() == 0) return std::nullopt;
  return TxnId(txn->txn_id());
}

}  // namespace kingfisher
