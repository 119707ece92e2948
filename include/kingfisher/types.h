// The value types of the public client API (namespace kingfisher).
//
// They are the library's own message-model types re-exported under the public namespace, so
// that a message built by a client is the very object the client library sends (no copy into a
// second model). Thread-safety: plain values; see each type's header. Errors: none here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/hybrid_time.h"
#include "common/strong_id.h"
#include "message/message.h"
#include "message/message_id.h"
#include "message/message_type.h"
#include "message/properties.h"
#include "trace/context.h"

namespace kingfisher {

// A message to append: type + payload + properties. Build it with kf::NewInsertMessage and
// friends (message/builders.h) or MutableMessage(type, payload) plus set_vchannel().
using Message = kf::MutableMessage;
using MessageId = kf::MessageId;
using MessageType = kf::MessageType;
using TimeTick = kf::TimeTick;
using TxnId = kf::TxnId;
using Properties = kf::Properties;
// The explicit trace context of a call (docs/tracing.md): pass the caller's request context to
// Append so `wal.autocommit` hangs under it; a default Context starts a new trace.
using TraceContext = kf::trace::Context;

}  // namespace kingfisher
