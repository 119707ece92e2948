// The public Message (include/kingfisher/message.h) as the message model the client sends
// (message/message.h): the one place a user's message is checked and converted.
//
// Thread-safety: pure functions. Errors: INVALID_ARGUMENT (StreamingCode kInvalidArgument) for
// a property key reserved for the system; the message says nothing was sent.
#pragma once

#include "absl/status/statusor.h"
#include "kingfisher/message.h"
#include "message/message.h"

namespace kf::client {

// Type, vchannel, payload and user properties of `message` (its trace context is the caller's
// to use as the parent of the append's spans).
absl::StatusOr<MutableMessage> ToMutableMessage(kingfisher::Message message);

}  // namespace kf::client
