// The JSON lines kfctl prints (SPEC §8, a stable contract for scripts). Ids and timeticks are
// JSON strings (they exceed 2^53); message ids use MessageId::ToText, which --from / --after
// accept back.
// Pure functions: thread-safe, no errors.
#pragma once

#include <string>
#include <string_view>

#include "kingfisher/client.h"

namespace kf::cli {

// {"message_id","timetick","vchannel","txn_id"} for one acknowledged append.
std::string RenderAck(const kingfisher::AppendResult& r, std::string_view vchannel);
// {"message_id","type","timetick","vchannel","txn_id","rows","properties"} (+ "messages" for a
// Txn): rows = pk count of a decodable Insert payload, else null.
std::string RenderConsumed(const kingfisher::ConsumedMessage& m);
// {"nodes":[{"id","address","state"}],"pchannels":[{"pchannel","node","term","state"}]}.
std::string RenderStatus(const kingfisher::ClusterStatus& s);

}  // namespace kf::cli
