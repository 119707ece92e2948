#include "message/message.h"

#include <cassert>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/coding.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "common/text_codec.h"
#include "message/utf8.h"

namespace kf {
namespace {

// Wire tags of kingfisher.v1.Message and of its map entries: (field << 3) | LEN.
constexpr char kPayloadTag = 0x0A;     // Message.payload = 1
constexpr char kPropertiesTag = 0x12;  // Message.properties = 2
constexpr char kEntryKeyTag = 0x0A;    // entry.key = 1
constexpr char kEntryValueTag = 0x12;  // entry.value = 2

size_t VarintLength(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

size_t LenFieldSize(size_t n) { return 1 + VarintLength(n) + n; }

size_t EntrySize(std::string_view k, std::string_view v) {
  return LenFieldSize(k.size()) + LenFieldSize(v.size());
}

// Writers into a buffer sized by EncodedSize(): no capacity checks per byte.
char* PutVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

char* PutLenField(char* p, char tag, std::string_view bytes) {
  *p++ = tag;
  p = PutVarint(p, bytes.size());
  std::memcpy(p, bytes.data(), bytes.size());
  return p + bytes.size();
}

// A message's properties for EncodedMessageSize and EncodeMessage: for_each(fn) calls
// fn(key, value) for each property in key order.
auto EachProperty(const Properties& props) {
  return [p = &props](const auto& fn) {
    for (const auto& [k, v] : *p) fn(k, v);
  };
}

// The exact size of a message with `payload` and the properties `for_each` yields.
template <typename ForEach>
size_t EncodedMessageSize(std::string_view payload, const ForEach& for_each) {
  size_t size = payload.empty() ? 0 : LenFieldSize(payload.size());
  for_each([&](std::string_view k, std::string_view v) { size += LenFieldSize(EntrySize(k, v)); });
  return size;
}

// Appends a message with `payload` and the properties `for_each` yields (called twice: size,
// then bytes).
template <typename ForEach>
void EncodeMessage(std::string_view payload, const ForEach& for_each, std::string* dst) {
  // One exact-size growth, then plain stores: this runs once per append.
  const size_t start = dst->size();
  const size_t size = EncodedMessageSize(payload, for_each);
  dst->resize(start + size);
  char* p = dst->data() + start;
  // proto3 omits a default (empty) bytes field; protobuf writes fields in number order and,
  // deterministically, map entries in key order with both key and value present.
  if (!payload.empty()) p = PutLenField(p, kPayloadTag, payload);
  for_each([&](std::string_view k, std::string_view v) {
    *p++ = kPropertiesTag;
    p = PutVarint(p, EntrySize(k, v));
    p = PutLenField(p, kEntryKeyTag, k);
    p = PutLenField(p, kEntryValueTag, v);
  });
  assert(p == dst->data() + start + size);
}

// A message's properties as an AppendStamp leaves them, in key order: the stamp's replace the
// message's (both LCMID keys go but the stamp's). Merged once, as views into the message and
// into itself: not copyable.
class StampedProperties {
 public:
  StampedProperties(const Properties& props, const AppendStamp& s) {
    std::array<std::pair<std::string_view, std::string_view>, 4> stamp;  // in key order
    size_t n = 0;
    if (s.last_confirmed) {
      lc_ = Base64Encode(s.last_confirmed->Encode());
      stamp[n++] = {prop::kLastConfirmed, lc_};
    } else {
      stamp[n++] = {prop::kLastConfirmedSelf, ""};
    }
    const bool has_tc = s.trace_context_size > 0;
    if (has_tc) {
      stamp[n++] = {prop::kTraceContext,
                    std::string_view(s.trace_context.data(), s.trace_context_size)};
    }
    stamp[n++] = {prop::kTimeTick, std::string_view(tt_, Base36EncodeTo(s.timetick.value(), tt_))};
    stamp[n++] = {
        prop::kWalTerm,
        std::string_view(wt_, Base36EncodeTo(static_cast<uint64_t>(s.term.value()), wt_))};
    auto replaced = [has_tc](std::string_view key) {
      return key == prop::kLastConfirmed || key == prop::kLastConfirmedSelf ||
             key == prop::kTimeTick || key == prop::kWalTerm ||
             (has_tc && key == prop::kTraceContext);
    };
    merged_.reserve(props.size() + n);
    auto it = props.begin();
    for (size_t i = 0; i < n; ++i) {
      for (; it != props.end() && std::string_view(it->first) < stamp[i].first; ++it) {
        if (!replaced(it->first)) merged_.emplace_back(it->first, it->second);
      }
      merged_.push_back(stamp[i]);
    }
    for (; it != props.end(); ++it) {
      if (!replaced(it->first)) merged_.emplace_back(it->first, it->second);
    }
  }
  StampedProperties(const StampedProperties&) = delete;
  StampedProperties& operator=(const StampedProperties&) = delete;

  template <typename Fn>
  void ForEach(const Fn& fn) const {
    for (const auto& [k, v] : merged_) fn(k, v);
  }

 private:
  absl::InlinedVector<std::pair<std::string_view, std::string_view>, 16> merged_;
  char tt_[kMaxBase36Chars];
  char wt_[kMaxBase36Chars];
  std::string lc_;  // allocates only for an LCMID other than the message itself
};

absl::Status Malformed(std::string_view what) {
  return StreamingError(StreamingCode::kInvalidArgument,
                        absl::StrCat("malformed message: ", ToAbsl(what)));
}

// A length prefix in minimal form, at most what is left of the input. GetVarint64 alone would
// accept padded (non-minimal) varints, which protobuf never writes and which would make two
// byte strings decode to the same message.
bool GetLength(std::string_view* in, uint64_t* len) {
  const std::string_view start = *in;
  if (!GetVarint64(in, len)) return false;
  const size_t used = start.size() - in->size();
  if (used > 1 && start[used - 1] == 0) return false;  // trailing zero group: overlong
  if (used == 10 && static_cast<unsigned char>(start[9]) > 1) return false;  // > 64 bits
  return *len <= in->size();
}

// Reads one length-delimited field after its tag; `what` names it in errors.
absl::Status GetLenField(std::string_view* in, std::string_view what, std::string_view* out) {
  uint64_t len = 0;
  if (!GetLength(in, &len)) {
    return Malformed(absl::StrCat(ToAbsl(what), ": bad or truncated length"));
  }
  *out = in->substr(0, len);
  in->remove_prefix(len);
  return absl::OkStatus();
}

absl::Status DecodeEntry(std::string_view entry, std::vector<Properties::value_type>* props) {
  std::optional<std::string_view> key, value;
  while (!entry.empty()) {
    const char tag = entry.front();
    entry.remove_prefix(1);
    std::optional<std::string_view>* slot;
    if (tag == kEntryKeyTag) {
      slot = &key;
    } else if (tag == kEntryValueTag) {
      slot = &value;
    } else {
      return Malformed(absl::StrCat("unknown field in property entry (tag byte 0x",
                                    absl::Hex(static_cast<unsigned char>(tag)), ")"));
    }
    if (slot->has_value()) return Malformed("repeated field in property entry");
    std::string_view field;
    RETURN_IF_ERROR(GetLenField(&entry, "property entry", &field));
    *slot = field;
  }
  std::string_view k = key.value_or(""), v = value.value_or("");
  if (!IsValidUtf8(k)) return Malformed("property key is not UTF-8");
  if (!IsValidUtf8(v)) {
    return Malformed(absl::StrCat("value of property '", ToAbsl(k), "' is not UTF-8"));
  }
  props->emplace_back(std::piecewise_construct, std::forward_as_tuple(k), std::forward_as_tuple(v));
  return absl::OkStatus();
}

// Canonical decimal: what the constructor writes for `_t`.
std::optional<int64_t> ParseDecimal(std::string_view s) {
  if (s.empty() || s.size() > 18 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

MutableMessage::MutableMessage(MessageType type, std::string payload)
    : payload_(std::move(payload)) {
  // Room for what the append path stamps (timetick, term, LCMID, vchannel, `_ik`, `_tc`): one
  // allocation per message.
  properties_.reserve(8);
  properties_.emplace(std::string(prop::kType), std::to_string(static_cast<int32_t>(type)));
  properties_.emplace(std::string(prop::kVersion), std::string(prop::kCurrentVersion));
}

MessageType MutableMessage::type() const {
  auto raw = GetProperty(prop::kType);
  if (!raw) return MessageType::kUnknown;
  auto n = ParseDecimal(*raw);
  if (!n) return MessageType::kUnknown;
  return MessageTypeFromNumber(*n).value_or(MessageType::kUnknown);
}

std::optional<std::string_view> MutableMessage::GetProperty(std::string_view key) const {
  auto it = properties_.find(key);
  if (it == properties_.end()) return std::nullopt;
  return std::string_view(it->second);
}

bool MutableMessage::HasProperty(std::string_view key) const {
  return properties_.find(key) != properties_.end();
}

void MutableMessage::SetProperty(std::string key, std::string value) {
  properties_.insert_or_assign(std::move(key), std::move(value));
}

void MutableMessage::AssignProperty(std::string_view key, std::string_view value) {
  properties_.Assign(key, value);
}

void MutableMessage::EraseProperty(std::string_view key) { properties_.erase(key); }

std::string_view MutableMessage::vchannel() const {
  return GetProperty(prop::kVChannel).value_or(std::string_view());
}

void MutableMessage::set_vchannel(std::string v) {
  if (v.empty()) {
    EraseProperty(prop::kVChannel);
  } else {
    SetProperty(std::string(prop::kVChannel), std::move(v));
  }
}

std::optional<TimeTick> MutableMessage::timetick() const {
  auto raw = GetProperty(prop::kTimeTick);
  if (!raw) return std::nullopt;
  auto v = Base36Decode(*raw);
  if (!v) return std::nullopt;
  return TimeTick(*v);
}

void MutableMessage::set_timetick(TimeTick t) {
  char buf[kMaxBase36Chars];
  AssignProperty(prop::kTimeTick, std::string_view(buf, Base36EncodeTo(t.value(), buf)));
}

std::optional<Term> MutableMessage::wal_term() const {
  auto raw = GetProperty(prop::kWalTerm);
  if (!raw) return std::nullopt;
  auto v = Base36Decode(*raw);
  if (!v || *v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return Term(static_cast<int64_t>(*v));
}

void MutableMessage::set_wal_term(Term t) {
  char buf[kMaxBase36Chars];
  AssignProperty(prop::kWalTerm,
                 std::string_view(buf, Base36EncodeTo(static_cast<uint64_t>(t.value()), buf)));
}

std::optional<MessageId> MutableMessage::last_confirmed() const {
  auto raw = GetProperty(prop::kLastConfirmed);
  if (!raw) return std::nullopt;
  auto bytes = Base64Decode(*raw);
  if (!bytes) return std::nullopt;
  auto id = MessageId::Decode(*bytes);
  if (!id.ok()) return std::nullopt;
  return *id;
}

bool MutableMessage::last_confirmed_is_self() const {
  return HasProperty(prop::kLastConfirmedSelf);
}

void MutableMessage::set_last_confirmed(const MessageId& id) {
  EraseProperty(prop::kLastConfirmedSelf);
  SetProperty(std::string(prop::kLastConfirmed), Base64Encode(id.Encode()));
}

void MutableMessage::set_last_confirmed_self() {
  EraseProperty(prop::kLastConfirmed);
  AssignProperty(prop::kLastConfirmedSelf, "");
}

namespace {
template <typename Proto>
std::optional<Proto> GetProtoProperty(const MutableMessage& m, std::string_view key) {
  auto raw = m.GetProperty(key);
  if (!raw) return std::nullopt;
  auto bytes = Base64Decode(*raw);
  if (!bytes) return std::nullopt;
  Proto p;
  if (!p.ParseFromString(*bytes)) return std::nullopt;
  return p;
}

void SetProtoProperty(MutableMessage* m, std::string_view key,
                      const google::protobuf::MessageLite& p) {
  m->SetProperty(std::string(key), Base64Encode(p.SerializeAsString()));
}
}  // namespace

std::optional<kingfisher::v1::TxnContext> MutableMessage::txn() const {
  return GetProtoProperty<kingfisher::v1::TxnContext>(*this, prop::kTxn);
}
void MutableMessage::set_txn(const kingfisher::v1::TxnContext& txn) {
  SetProtoProperty(this, prop::kTxn, txn);
}

std::optional<kingfisher::v1::BroadcastHeader> MutableMessage::broadcast_header() const {
  return GetProtoProperty<kingfisher::v1::BroadcastHeader>(*this, prop::kBroadcast);
}
void MutableMessage::set_broadcast_header(const kingfisher::v1::BroadcastHeader& h) {
  SetProtoProperty(this, prop::kBroadcast, h);
}

std::optional<kingfisher::v1::ReplicateHeader> MutableMessage::replicate_header() const {
  return GetProtoProperty<kingfisher::v1::ReplicateHeader>(*this, prop::kReplicate);
}
void MutableMessage::set_replicate_header(const kingfisher::v1::ReplicateHeader& h) {
  SetProtoProperty(this, prop::kReplicate, h);
}

std::optional<std::string_view> MutableMessage::idempotency_key() const {
  return GetProperty(prop::kIdempotencyKey);
}
void MutableMessage::set_idempotency_key(std::string k) {
  SetProperty(std::string(prop::kIdempotencyKey), std::move(k));
}

bool MutableMessage::not_persisted() const { return HasProperty(prop::kNotPersisted); }
void MutableMessage::set_not_persisted() { AssignProperty(prop::kNotPersisted, ""); }

size_t MutableMessage::EncodedSize() const {
  return EncodedMessageSize(payload_, EachProperty(properties_));
}

std::string MutableMessage::Encode() const {
  std::string out;
  EncodeTo(&out);
  return out;
}

void MutableMessage::EncodeTo(std::string* dst) const {
  EncodeMessage(payload_, EachProperty(properties_), dst);
}

void MutableMessage::EncodeTo(std::string* dst, const AppendStamp& stamp) const {
  const StampedProperties stamped(properties_, stamp);
  EncodeMessage(
      payload_, [&](const auto& fn) { stamped.ForEach(fn); }, dst);
}

void MutableMessage::Stamp(const AppendStamp& stamp) {
  set_timetick(stamp.timetick);
  set_wal_term(stamp.term);
  if (stamp.last_confirmed) {
    set_last_confirmed(*stamp.last_confirmed);
  } else {
    set_last_confirmed_self();
  }
  if (stamp.trace_context_size > 0) {
    AssignProperty(prop::kTraceContext,
                   std::string_view(stamp.trace_context.data(), stamp.trace_context_size));
  }
}

absl::StatusOr<MutableMessage> MutableMessage::Decode(std::string_view bytes) {
  MutableMessage m;
  std::vector<Properties::value_type> properties;
  properties.reserve(8);  // what a stamped message carries: one allocation
  bool seen_payload = false;
  while (!bytes.empty()) {
    const char tag = bytes.front();
    bytes.remove_prefix(1);
    std::string_view field;
    if (tag == kPayloadTag) {
      if (seen_payload) return Malformed("repeated payload field");
      seen_payload = true;
      RETURN_IF_ERROR(GetLenField(&bytes, "payload", &field));
      m.payload_.assign(field);
    } else if (tag == kPropertiesTag) {
      RETURN_IF_ERROR(GetLenField(&bytes, "property entry", &field));
      RETURN_IF_ERROR(DecodeEntry(field, &properties));
    } else {
      return Malformed(absl::StrCat("unknown field number or wire type (tag byte 0x",
                                    absl::Hex(static_cast<unsigned char>(tag)), ")"));
    }
  }
  if (auto dup = m.properties_.Adopt(std::move(properties))) {
    return Malformed(absl::StrCat("duplicate property key '", *dup, "'"));
  }
  return m;
}

MessageType MutableMessage::DecodeType(std::string_view bytes) {
  while (!bytes.empty()) {
    const char tag = bytes.front();
    bytes.remove_prefix(1);
    uint64_t len = 0;
    if ((tag != kPayloadTag && tag != kPropertiesTag) || !GetLength(&bytes, &len)) break;
    std::string_view field = bytes.substr(0, len);
    bytes.remove_prefix(len);
    if (tag != kPropertiesTag) continue;
    std::string_view key, value;
    while (!field.empty()) {
      const char entry_tag = field.front();
      field.remove_prefix(1);
      uint64_t n = 0;
      if (!GetLength(&field, &n)) return MessageType::kUnknown;
      (entry_tag == kEntryKeyTag ? key : value) = field.substr(0, n);
      field.remove_prefix(n);
    }
    if (key != prop::kType) continue;
    auto n = ParseDecimal(value);
    return n ? MessageTypeFromNumber(*n).value_or(MessageType::kUnknown) : MessageType::kUnknown;
  }
  return MessageType::kUnknown;
}

ImmutableMessage::ImmutableMessage(MessageId id, MutableMessage message)
    : id_(id),
      message_(std::move(message)),
      type_(message_.type()),
      timetick_(message_.timetick().value_or(TimeTick(0))),
      last_confirmed_(message_.last_confirmed_is_self()
                          ? id_
                          : message_.last_confirmed().value_or(MessageId())) {}

}  // namespace kf
