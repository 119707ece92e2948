#include "message/message_type.h"

namespace kingfisher {

std::string_view MessageTypeName(MessageType t) {
  switch (t) {
    case MessageType::kTimeTick:
      return "TimeTick";
    case MessageType::kInsert:
      return "Insert";
    case MessageType::kDelete:
      return "Delete";
    case MessageType::kFlush:
      return "Flush";
    case MessageType::kCreateCollection:
      return "CreateCollection";
    case MessageType::kDropCollection:
      return "DropCollection";
    case MessageType::kCreatePartition:
      return "CreatePartition";
    case MessageType::kDropPartition:
      return "DropPartition";
    case MessageType::kManualFlush:
      return "ManualFlush";
    case MessageType::kCreateSegment:
      return "CreateSegment";
    case MessageType::kAlterReplicateConfig:
      return "AlterReplicateConfig";
    case MessageType::kBeginTxn:
      return "BeginTxn";
    case MessageType::kCommitTxn:
      return "CommitTxn";
    case MessageType::kRollbackTxn:
      return "RollbackTxn";
    case MessageType::kTxn:
      return "Txn";
    case MessageType::kUnknown:
      break;
  }
  return "Unknown";
}

}  // namespace kingfisher

namespace kf {

std::optional<MessageType> MessageTypeFromNumber(int64_t n) {
  switch (n) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
    case 8:
    case 9:
    case 10:
    case 800:
    case 900:
    case 901:
    case 902:
    case 999:
      return static_cast<MessageType>(n);
    default:
      return std::nullopt;
  }
}

bool IsSystemType(MessageType t) {
  return t == MessageType::kTimeTick || IsTxnControlType(t) || t == MessageType::kTxn;
}

bool IsExclusiveType(MessageType t) {
  switch (t) {
    case MessageType::kCreateCollection:
    case MessageType::kDropCollection:
    case MessageType::kCreatePartition:
    case MessageType::kDropPartition:
    case MessageType::kManualFlush:
    case MessageType::kAlterReplicateConfig:
      return true;
    default:
      return false;
  }
}

bool IsSelfControlledType(MessageType t) {
  return t == MessageType::kTimeTick || t == MessageType::kCreateSegment ||
         t == MessageType::kFlush;
}

bool IsTxnControlType(MessageType t) {
  return t == MessageType::kBeginTxn || t == MessageType::kCommitTxn ||
         t == MessageType::kRollbackTxn;
}

}  // namespace kf
