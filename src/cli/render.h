// The JSON lines kfctl prints (docs/semantics.md §8, a stable contract for scripts). Ids and
// timeticks are JSON strings (they exceed 2^53); message ids use MessageId::ToText, which --from /
// --after accept back.
// Pure functions: thread-safe, no errors.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kingfisher/client.h"

namespace kf::cli {

// {"message_id","timetick","vchannel","txn_id"} for one acknowledged append.
std::string RenderAck(const kingfisher::AppendResult& r, std::string_view vchannel);
// {"message_id","type","timetick","vchannel","txn_id","rows","properties"} (+ "messages" for a
// Txn): rows = pk count of a decodable Insert payload, else null.
std::string RenderConsumed(const kingfisher::ConsumedMessage& m);
// {"nodes":[{"id","address","state"}],"pchannels":[{"pchannel","node","term","state"}]}.
std::string RenderStatus(const kingfisher::ClusterStatus& s);

// {"id","database","name","dim","metric","shards","vchannels":[...],"state",
//  "partitions":[{"name","state"}],"create_time_ms"}; vchannels[i] is shard i's.
std::string RenderCollection(const kingfisher::CollectionInfo& c);
// {"collections":[RenderCollection...]}.
std::string RenderCollections(const std::vector<kingfisher::CollectionInfo>& cs);
// {"collection":NAME,"shards":[{"vchannel":..,"flush_timetick":..,"checkpoint_timetick":..}]}.
std::string RenderFlushed(std::string_view collection,
                          const std::vector<kingfisher::FlushedShard>& shards);

// Up to this many pks are listed in a rows ack ("pks"); longer messages give null.
inline constexpr size_t kMaxListedPks = 16;
// RenderAck's fields + {"rows","first_pk","last_pk","pks"} for an acknowledged Insert or
// Delete carrying `pks`, in message order (pks as JSON strings, like ids).
std::string RenderRowsAck(const kingfisher::AppendResult& r, std::string_view vchannel,
                          const std::vector<int64_t>& pks);

// {"query":i,"hits":[{"pk":"..","distance":d},...],"timestamp":"T"} (pks and T as strings).
std::string RenderSearchHits(size_t query, const std::vector<kingfisher::SearchHit>& hits,
                             kingfisher::TimeTick timestamp);
// {"pk":"..","vector":[...],"timestamp":"T"}.
std::string RenderRow(const kingfisher::Row& row, kingfisher::TimeTick timestamp);

}  // namespace kf::cli
