// The reserved message property keys of docs/semantics.md §2 and the property map type.
//
// Keys starting with '_' belong to the system; user-supplied keys must not use them (see
// validate.h).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kingfisher/properties.h"

namespace kf {
namespace prop {

inline constexpr std::string_view kVersion = "_v";              // decimal, "2"
inline constexpr std::string_view kType = "_t";                 // decimal MessageType number
inline constexpr std::string_view kTimeTick = "_tt";            // base-36 uint64
inline constexpr std::string_view kLastConfirmed = "_lc";       // base64(MessageId::Encode())
inline constexpr std::string_view kLastConfirmedSelf = "_lcs";  // empty: LCMID == own id
inline constexpr std::string_view kVChannel = "_vc";            // absent = pchannel-level
inline constexpr std::string_view kWalTerm = "_wt";             // base-36
inline constexpr std::string_view kHeader = "_h";               // base64 proto, type-specific
inline constexpr std::string_view kTxn = "_tx";                 // base64 TxnContext
inline constexpr std::string_view kBroadcast = "_bh";           // base64 BroadcastHeader
inline constexpr std::string_view kReplicate = "_rh";           // base64 ReplicateHeader
inline constexpr std::string_view kNoReplicate = "_ur";         // empty
inline constexpr std::string_view kNotPersisted = "_np";        // empty (TimeTick only)
inline constexpr std::string_view kTraceContext = "_tc";        // base64 TraceContextHeader
inline constexpr std::string_view kIdempotencyKey = "_ik";      // "<producer-id>:<sequence>"

// The message version this build writes.
inline constexpr std::string_view kCurrentVersion = "2";

}  // namespace prop

// True for keys owned by the system (they start with '_').
inline bool IsReservedKey(std::string_view key) { return !key.empty() && key.front() == '_'; }

// A message's properties (a sorted flat map): the public API's type.
using kingfisher::Properties;

}  // namespace kf
