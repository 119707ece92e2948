#include "message/message.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <charconv>
#include <cstring>
#include <iterator>
#include <tuple>
#include <utility>
#include <vector>

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

// The room a message's slot text gets when it first outgrows its inline buffer: what a stamped
// message's slot values take (the `_tc` alone is 44 bytes).
constexpr size_t kSlotTextReserve = 120;

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

// The exact size of a message with `payload` and the properties `for_each` yields: for_each(fn)
// calls fn(key, value) for each property in key order.
template <typename ForEach>
size_t EncodedMessageSize(std::string_view payload, const ForEach& for_each) {
  size_t size = payload.empty() ? 0 : LenFieldSize(payload.size());
  for_each([&](std::string_view k, std::string_view v) { size += LenFieldSize(EntrySize(k, v)); });
  return size;
}

// Appends a message with `payload` and the properties `for_each` yields (called twice: size,
// then bytes; cheaper than collecting them).
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

// One map entry's key and value (either may be absent: empty).
absl::Status DecodeEntry(std::string_view entry, std::string_view* key_out,
                         std::string_view* value_out) {
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
  *key_out = key.value_or("");
  *value_out = value.value_or("");
  if (!IsValidUtf8(*key_out)) return Malformed("property key is not UTF-8");
  if (!IsValidUtf8(*value_out)) {
    return Malformed(absl::StrCat("value of property '", ToAbsl(*key_out), "' is not UTF-8"));
  }
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

MessageType ParseType(std::string_view s) {
  auto n = ParseDecimal(s);
  if (!n) return MessageType::kUnknown;
  return MessageTypeFromNumber(*n).value_or(MessageType::kUnknown);
}

}  // namespace

MutableMessage::MutableMessage(MessageType type, std::string payload)
    : payload_(std::move(payload)) {
  char number[16];
  const auto end = std::to_chars(number, number + sizeof(number), static_cast<int32_t>(type)).ptr;
  Assign(kT, std::string_view(number, static_cast<size_t>(end - number)));
  Assign(kV, prop::kCurrentVersion);
}

MutableMessage::MutableMessage(MutableMessage&& other) noexcept
    : payload_(std::move(other.payload_)),
      slot_text_(std::move(other.slot_text_)),
      slot_refs_(other.slot_refs_),
      present_(std::exchange(other.present_, 0)),
      type_(std::exchange(other.type_, MessageType::kUnknown)),
      others_(std::move(other.others_)) {}

MutableMessage& MutableMessage::operator=(MutableMessage&& other) noexcept {
  if (this == &other) return *this;
  payload_ = std::move(other.payload_);
  slot_text_ = std::move(other.slot_text_);
  slot_refs_ = other.slot_refs_;
  present_ = std::exchange(other.present_, 0);
  type_ = std::exchange(other.type_, MessageType::kUnknown);
  others_ = std::move(other.others_);
  return *this;
}

bool operator==(const MutableMessage& a, const MutableMessage& b) {
  if (a.payload_ != b.payload_ || a.present_ != b.present_ || a.others_ != b.others_) {
    return false;
  }
  for (uint32_t p = a.present_; p != 0; p &= p - 1) {
    const int slot = std::countr_zero(p);
    if (a.SlotValue(slot) != b.SlotValue(slot)) return false;
  }
  return true;
}

int MutableMessage::SlotOf(std::string_view key) {
  static_assert(std::is_sorted(kSlotKeys.begin(), kSlotKeys.end()));
  if (key.size() < 2 || key[0] != '_') return -1;
  const char c = key[1];
  switch (key.size()) {
    case 2:
      return c == 't' ? kT : c == 'v' ? kV : -1;
    case 3: {
      const char d = key[2];
      switch (c) {
        case 'i':
          return d == 'k' ? kIk : -1;
        case 'l':
          return d == 'c' ? kLc : -1;
        case 't':
          return d == 'c' ? kTc : d == 't' ? kTt : d == 'x' ? kTx : -1;
        case 'v':
          return d == 'c' ? kVc : -1;
        case 'w':
          return d == 't' ? kWt : -1;
        default:
          return -1;
      }
    }
    case 4:
      return key == prop::kLastConfirmedSelf ? kLcs : -1;
    default:
      return -1;
  }
}

void MutableMessage::Assign(int slot, std::string_view value) {
  SlotRef& ref = slot_refs_[slot];
  if (Has(slot) && value.size() <= ref.size) {
    // May alias; a null view (empty) must not reach memmove.
    if (!value.empty()) std::memmove(slot_text_.data() + ref.offset, value.data(), value.size());
    ref.size = static_cast<uint32_t>(value.size());
  } else if (slot_text_.size() + value.size() <= slot_text_.capacity()) {
    // No reallocation, so a `value` viewing into slot_text_ stays valid.
    ref = {.offset = static_cast<uint32_t>(slot_text_.size()),
           .size = static_cast<uint32_t>(value.size())};
    slot_text_.append(value);
  } else {
    // Out of room: a new text with only the live values (outgrown and erased ones stayed
    // behind until now) and room to grow, so that a message allocates about once.
    present_ &= ~Bit(slot);
    size_t live = value.size();
    for (uint32_t p = present_; p != 0; p &= p - 1) live += slot_refs_[std::countr_zero(p)].size;
    std::string text;
    text.reserve(std::max(2 * live, kSlotTextReserve));
    for (uint32_t p = present_; p != 0; p &= p - 1) {
      SlotRef& r = slot_refs_[std::countr_zero(p)];
      const size_t offset = text.size();
      text.append(slot_text_, r.offset, r.size);
      r.offset = static_cast<uint32_t>(offset);
    }
    ref = {.offset = static_cast<uint32_t>(text.size()),
           .size = static_cast<uint32_t>(value.size())};
    text.append(value);  // before slot_text_ goes: `value` may view into it
    slot_text_ = std::move(text);
  }
  present_ |= Bit(slot);
  if (slot == kT) type_ = ParseType(SlotValue(slot));
}

void MutableMessage::Erase(int slot) {
  present_ &= ~Bit(slot);
  slot_refs_[slot] = {};
  if (slot == kT) type_ = MessageType::kUnknown;
}

std::optional<std::string_view> MutableMessage::GetProperty(std::string_view key) const {
  if (const int slot = SlotOf(key); slot >= 0) return Get(slot);
  auto it = others_.find(key);
  if (it == others_.end()) return std::nullopt;
  return std::string_view(it->second);
}

bool MutableMessage::HasProperty(std::string_view key) const {
  if (const int slot = SlotOf(key); slot >= 0) return Has(slot);
  return others_.contains(key);
}

void MutableMessage::SetProperty(std::string key, std::string value) {
  if (const int slot = SlotOf(key); slot >= 0) return Assign(slot, value);
  others_.insert_or_assign(std::move(key), std::move(value));
}

void MutableMessage::AssignProperty(std::string_view key, std::string_view value) {
  if (const int slot = SlotOf(key); slot >= 0) return Assign(slot, value);
  others_.Assign(key, value);
}

void MutableMessage::EraseProperty(std::string_view key) {
  if (const int slot = SlotOf(key); slot >= 0) return Erase(slot);
  others_.erase(key);
}

Properties MutableMessage::properties() const {
  std::vector<Properties::value_type> all;
  all.reserve(static_cast<size_t>(std::popcount(present_)) + others_.size());
  ForEachProperty([&](std::string_view k, std::string_view v) { all.emplace_back(k, v); });
  Properties out;
  (void)out.Adopt(std::move(all));  // in key order, no duplicates
  return out;
}

void MutableMessage::ClearProperties() {
  slot_text_.clear();
  slot_refs_ = {};
  present_ = 0;
  type_ = MessageType::kUnknown;
  others_ = Properties();
}

void MutableMessage::SetProperties(Properties properties) {
  ClearProperties();
  for (auto& [k, v] : properties.TakeEntries()) SetProperty(std::move(k), std::move(v));
}

Properties MutableMessage::TakeProperties() {
  std::vector<Properties::value_type> all;
  all.reserve(static_cast<size_t>(std::popcount(present_)) + others_.size());
  std::vector<Properties::value_type> others = others_.TakeEntries();
  auto it = others.begin();
  for (uint32_t p = present_; p != 0; p &= p - 1) {
    const int slot = std::countr_zero(p);
    for (; it != others.end() && std::string_view(it->first) < kSlotKeys[slot]; ++it) {
      all.push_back(std::move(*it));
    }
    all.emplace_back(kSlotKeys[slot], SlotValue(slot));
  }
  std::move(it, others.end(), std::back_inserter(all));
  ClearProperties();
  Properties out;
  (void)out.Adopt(std::move(all));  // in key order, no duplicates
  return out;
}

std::string_view MutableMessage::vchannel() const { return Get(kVc).value_or(std::string_view()); }

void MutableMessage::set_vchannel(std::string v) {
  if (v.empty()) {
    Erase(kVc);
  } else {
    Assign(kVc, v);
  }
}

std::optional<TimeTick> MutableMessage::timetick() const {
  auto raw = Get(kTt);
  if (!raw) return std::nullopt;
  auto v = Base36Decode(*raw);
  if (!v) return std::nullopt;
  return TimeTick(*v);
}

void MutableMessage::set_timetick(TimeTick t) {
  char buf[kMaxBase36Chars];
  Assign(kTt, std::string_view(buf, Base36EncodeTo(t.value(), buf)));
}

std::optional<Term> MutableMessage::wal_term() const {
  auto raw = Get(kWt);
  if (!raw) return std::nullopt;
  auto v = Base36Decode(*raw);
  if (!v || *v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return Term(static_cast<int64_t>(*v));
}

void MutableMessage::set_wal_term(Term t) {
  char buf[kMaxBase36Chars];
  Assign(kWt, std::string_view(buf, Base36EncodeTo(static_cast<uint64_t>(t.value()), buf)));
}

std::optional<MessageId> MutableMessage::last_confirmed() const {
  auto raw = Get(kLc);
  if (!raw) return std::nullopt;
  auto bytes = Base64Decode(*raw);
  if (!bytes) return std::nullopt;
  auto id = MessageId::Decode(*bytes);
  if (!id.ok()) return std::nullopt;
  return *id;
}

bool MutableMessage::last_confirmed_is_self() const { return Has(kLcs); }

void MutableMessage::set_last_confirmed(const MessageId& id) {
  Erase(kLcs);
  Assign(kLc, Base64Encode(id.Encode()));
}

void MutableMessage::set_last_confirmed_self() {
  Erase(kLc);
  Assign(kLcs, "");
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

std::optional<std::string_view> MutableMessage::idempotency_key() const { return Get(kIk); }
void MutableMessage::set_idempotency_key(std::string k) { Assign(kIk, k); }

bool MutableMessage::not_persisted() const { return HasProperty(prop::kNotPersisted); }
void MutableMessage::set_not_persisted() { AssignProperty(prop::kNotPersisted, ""); }

size_t MutableMessage::EncodedSize() const {
  return EncodedMessageSize(payload_, [this](const auto& fn) { ForEachProperty(fn); });
}

std::string MutableMessage::Encode() const {
  std::string out;
  EncodeTo(&out);
  return out;
}

void MutableMessage::EncodeTo(std::string* dst) const {
  EncodeMessage(
      payload_, [this](const auto& fn) { ForEachProperty(fn); }, dst);
}

void MutableMessage::EncodeTo(std::string* dst, const AppendStamp& stamp) const {
  // The stamp's slots replace the message's (both LCMID keys go but the stamp's).
  std::array<std::string_view, kSlotCount> stamped;
  uint32_t replaced = Bit(kLc) | Bit(kLcs) | Bit(kTt) | Bit(kWt);
  uint32_t stamped_bits = Bit(kTt) | Bit(kWt);
  std::string lc;  // allocates only for an LCMID other than the message itself
  if (stamp.last_confirmed) {
    lc = Base64Encode(stamp.last_confirmed->Encode());
    stamped[kLc] = lc;
    stamped_bits |= Bit(kLc);
  } else {
    stamped[kLcs] = "";  // not a null view: its bytes go to memcpy
    stamped_bits |= Bit(kLcs);
  }
  if (stamp.trace_context_size > 0) {
    stamped[kTc] = std::string_view(stamp.trace_context.data(), stamp.trace_context_size);
    stamped_bits |= Bit(kTc);
    replaced |= Bit(kTc);
  }
  char tt[kMaxBase36Chars], wt[kMaxBase36Chars];
  stamped[kTt] = std::string_view(tt, Base36EncodeTo(stamp.timetick.value(), tt));
  stamped[kWt] =
      std::string_view(wt, Base36EncodeTo(static_cast<uint64_t>(stamp.term.value()), wt));
  const uint32_t present = (present_ & ~replaced) | stamped_bits;
  const auto value = [&](int slot) -> std::string_view {
    return (stamped_bits & Bit(slot)) != 0 ? stamped[slot] : SlotValue(slot);
  };
  EncodeMessage(
      payload_, [&](const auto& fn) { Merge(present, value, fn); }, dst);
}

void MutableMessage::EncodeWithTraceContextTo(std::string_view trace_context,
                                              std::string* dst) const {
  const uint32_t present = present_ | Bit(kTc);
  const auto value = [&](int slot) -> std::string_view {
    return slot == kTc ? trace_context : SlotValue(slot);
  };
  EncodeMessage(
      payload_, [&](const auto& fn) { Merge(present, value, fn); }, dst);
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
    Assign(kTc, std::string_view(stamp.trace_context.data(), stamp.trace_context_size));
  }
}

absl::StatusOr<MutableMessage> MutableMessage::Decode(std::string_view bytes) {
  return DecodeFrom(bytes, nullptr);
}

absl::StatusOr<MutableMessage> MutableMessage::DecodeOwned(std::string&& bytes) {
  return DecodeFrom(bytes, &bytes);
}

absl::StatusOr<MutableMessage> MutableMessage::DecodeFrom(std::string_view bytes,
                                                          std::string* storage) {
  MutableMessage m;
  std::vector<Properties::value_type> others;  // usually none: no allocation
  bool seen_payload = false;
  std::string_view payload;
  while (!bytes.empty()) {
    const char tag = bytes.front();
    bytes.remove_prefix(1);
    std::string_view field;
    if (tag == kPayloadTag) {
      if (seen_payload) return Malformed("repeated payload field");
      seen_payload = true;
      RETURN_IF_ERROR(GetLenField(&bytes, "payload", &field));
      payload = field;
      if (storage == nullptr) m.payload_.assign(field);
    } else if (tag == kPropertiesTag) {
      RETURN_IF_ERROR(GetLenField(&bytes, "property entry", &field));
      std::string_view key, value;
      RETURN_IF_ERROR(DecodeEntry(field, &key, &value));
      if (const int slot = SlotOf(key); slot < 0) {
        others.emplace_back(std::piecewise_construct, std::forward_as_tuple(key),
                            std::forward_as_tuple(value));
      } else if (m.Has(slot)) {
        return Malformed(absl::StrCat("duplicate property key '", ToAbsl(key), "'"));
      } else {
        m.Assign(slot, value);
      }
    } else {
      return Malformed(absl::StrCat("unknown field number or wire type (tag byte 0x",
                                    absl::Hex(static_cast<unsigned char>(tag)), ")"));
    }
  }
  if (auto dup = m.others_.Adopt(std::move(others))) {
    return Malformed(absl::StrCat("duplicate property key '", *dup, "'"));
  }
  if (storage != nullptr && !payload.empty()) {
    // Every property was copied out above, so the storage may become the payload: cut what
    // follows it, then what precedes it (the payload field comes first: a few bytes moved).
    const size_t offset = static_cast<size_t>(payload.data() - storage->data());
    m.payload_ = std::move(*storage);
    m.payload_.resize(offset + payload.size());
    m.payload_.erase(0, offset);
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

std::string_view ImmutableMessage::encoded() const {
  absl::call_once(encoding_.once, [this] { message_.EncodeTo(&encoding_.bytes); });
  return encoding_.bytes;
}

}  // namespace kf
