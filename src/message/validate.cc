#include "message/validate.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "message/payload.h"
#include "message/utf8.h"

namespace kf {
namespace {

template <typename... Parts>
absl::Status Invalid(const Parts&... parts) {
  return StreamingError(StreamingCode::kInvalidArgument, absl::StrCat(parts...));
}

absl::string_view Name(MessageType t) { return ToAbsl(MessageTypeName(t)); }

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

// Reserved keys the client library legitimately sets (docs/semantics.md §2 "Who sets what").
constexpr std::array<std::string_view, 6> kClientKeys = {
    prop::kType, prop::kVersion,      prop::kVChannel,
    prop::kTxn,  prop::kTraceContext, prop::kIdempotencyKey};
constexpr std::array<std::string_view, 5> kWalKeys = {prop::kTimeTick, prop::kLastConfirmed,
                                                      prop::kLastConfirmedSelf, prop::kWalTerm,
                                                      prop::kNotPersisted};

template <size_t N>
bool In(const std::array<std::string_view, N>& set, std::string_view key) {
  for (auto k : set) {
    if (k == key) return true;
  }
  return false;
}

absl::Status CheckUtf8(std::string_view k, std::string_view v) {
  if (!IsValidUtf8(k)) return Invalid("property key is not valid UTF-8");
  if (!IsValidUtf8(v)) return Invalid("value of property '", ToAbsl(k), "' is not valid UTF-8");
  return absl::OkStatus();
}

absl::Status CheckUtf8(const Properties& p) {
  for (const auto& [k, v] : p) RETURN_IF_ERROR(CheckUtf8(k, v));
  return absl::OkStatus();
}

absl::Status CheckReservedKey(const MutableMessage& m, bool ddl, std::string_view key) {
  if (!IsReservedKey(key) || In(kClientKeys, key)) return absl::OkStatus();
  if (key == prop::kBroadcast) {
    if (ddl) return absl::OkStatus();
    return Invalid("property '_bh' is set only by the broadcaster, and only on DDL messages (",
                   Name(m.type()), " is not DDL)");
  }
  if (In(kWalKeys, key)) {
    return Invalid("property '", ToAbsl(key),
                   "' is set only by the WAL; a producer must not set it");
  }
  if (key == prop::kReplicate) {
    return Invalid("property '_rh' is set only by the replicate service");
  }
  return Invalid("property key '", ToAbsl(key),
                 "' is reserved: keys starting with '_' belong to the system");
}

// The first property for which `check(key, value)` fails, in key order.
template <typename Check>
absl::Status CheckEach(const MutableMessage& m, const Check& check) {
  absl::Status status;
  m.ForEachProperty([&](std::string_view key, std::string_view value) {
    if (status.ok()) status = check(key, value);
  });
  return status;
}

absl::Status CheckTxn(const MutableMessage& m, MessageType t, bool ddl) {
  if (!m.HasProperty(prop::kTxn)) {
    if (t == MessageType::kCommitTxn || t == MessageType::kRollbackTxn) {
      return Invalid(Name(t), " needs the txn context '_tx' with the txn id from BeginTxn");
    }
    return absl::OkStatus();
  }
  auto txn = m.txn();
  if (!txn) return Invalid("property '_tx' is not a base64 TxnContext");
  if (ddl) return Invalid(Name(t), " cannot be part of a transaction");
  if (txn->keepalive_ms() < 0) {
    return Invalid("txn keepalive_ms must not be negative, got ", txn->keepalive_ms());
  }
  if (t != MessageType::kBeginTxn && txn->txn_id() == 0) {
    return Invalid(Name(t), " in a transaction needs the txn id returned by BeginTxn in '_tx'");
  }
  return absl::OkStatus();
}

// `<producer-id>:<sequence>`: the WAL deduplicates on it (docs/semantics.md §3), so it must parse.
absl::Status CheckIdempotencyKey(std::string_view key) {
  const size_t colon = key.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || !AllDigits(key.substr(colon + 1)) ||
      key.size() - colon - 1 > 19) {
    return Invalid("idempotency key '_ik' must be '<producer-id>:<sequence>', got '", ToAbsl(key),
                   "'");
  }
  return absl::OkStatus();
}

absl::Status CheckPayload(const MutableMessage& m, MessageType t, bool collection,
                          const ValidationOptions& o) {
  const std::string& payload = m.payload();
  if (payload.size() > o.max_payload_bytes) {
    return Invalid(Name(t), " payload of ", payload.size(), " bytes exceeds the limit of ",
                   o.max_payload_bytes, " bytes");
  }
  // Raw vchannels carry opaque Insert/Delete payloads: Kingfisher is also a generic WAL.
  switch (t) {
    case MessageType::kInsert:
      if (collection) return DecodeInsertBatch(payload).status();
      break;
    case MessageType::kDelete:
      if (collection) return DecodeDeletePks(payload).status();
      break;
    case MessageType::kCreateCollection:
      return DecodeCollectionSchema(payload).status();
    case MessageType::kDropCollection:
      return DecodeDropCollection(payload).status();
    case MessageType::kCreatePartition:
    case MessageType::kDropPartition:
      return DecodePartition(payload).status();
    default:
      break;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateProducedMessage(const MutableMessage& m, const ValidationOptions& o) {
  const MessageType t = m.type();
  if (t == MessageType::kUnknown) {
    auto raw = m.GetProperty(prop::kType);
    if (!raw) return Invalid("message has no type (property '_t')");
    return Invalid("unknown message type '", ToAbsl(*raw), "' (property '_t')");
  }
  if (t == MessageType::kTxn) {
    return Invalid("Txn is a synthetic type assembled by consumers; it cannot be produced");
  }
  if (IsSelfControlledType(t)) {
    return Invalid(Name(t), " messages are generated by the WAL itself and cannot be produced");
  }
  const bool ddl = IsExclusiveType(t);
  if (ddl && !m.HasProperty(prop::kBroadcast)) {
    return Invalid(Name(t),
                   " is accepted only from the broadcaster (with a broadcast header '_bh')");
  }
  if (auto v = m.GetProperty(prop::kVersion); v && *v != prop::kCurrentVersion) {
    return Invalid("unsupported message version '", ToAbsl(*v), "' (property '_v'; want ",
                   ToAbsl(prop::kCurrentVersion), ")");
  }
  size_t property_bytes = 0;
  RETURN_IF_ERROR(CheckEach(m, [&](std::string_view k, std::string_view v) {
    property_bytes += k.size() + v.size();
    return CheckUtf8(k, v);
  }));
  if (property_bytes > o.max_property_bytes) {
    return Invalid("properties of ", property_bytes,
                   " bytes (keys and values) exceed the limit of ", o.max_property_bytes,
                   " bytes; data belongs in the payload");
  }
  RETURN_IF_ERROR(CheckEach(
      m, [&](std::string_view k, std::string_view) { return CheckReservedKey(m, ddl, k); }));
  if (ddl && !m.broadcast_header()) {
    return Invalid("property '_bh' is not a base64 BroadcastHeader");
  }

  const std::string_view vchannel = m.vchannel();
  bool collection = false;
  if (vchannel.empty()) {
    // Everything a producer may send is vchannel-scoped except cluster-level config.
    if (t != MessageType::kAlterReplicateConfig) {
      return Invalid(Name(t), " needs a vchannel (property '_vc')");
    }
  } else {
    ASSIGN_OR_RETURN(std::optional<CollectionVChannel> shard, ParseVChannel(vchannel));
    collection = shard.has_value();
  }
  RETURN_IF_ERROR(CheckTxn(m, t, ddl));
  if (auto ik = m.idempotency_key()) RETURN_IF_ERROR(CheckIdempotencyKey(*ik));
  return CheckPayload(m, t, collection, o);
}

absl::Status ValidateUserProperties(const Properties& p) {
  for (const auto& [key, value] : p) {
    if (IsReservedKey(key)) {
      return Invalid("property key '", key,
                     "' is reserved: user property keys must not start with '_'");
    }
  }
  return CheckUtf8(p);
}

}  // namespace kf
