#include "streaming/ddl/replicated_ddl.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "message/message_trace.h"
#include "spdlog/spdlog.h"

namespace kf::streaming::ddl {
namespace {

using kingfisher::v1::ReplicatedDdlPiece;

// One source broadcast's records.
struct Group {
  std::map<uint32_t, std::pair<ReplicatedDdlPiece, meta::KeyValue>> pieces;  // by index
  // A `done` marker of the layout before ClusterKeys::replicated_ddl_done, still in the prefix.
  std::optional<meta::KeyValue> legacy_done;
  bool applied = false;  // its marker exists
};

bool AllLanded(const Group& g) {
  if (g.pieces.empty()) return false;
  const uint32_t count = g.pieces.begin()->second.first.vchannel_count();
  if (g.pieces.size() != count) return false;
  uint32_t expected = 0;
  for (const auto& [index, piece] : g.pieces) {
    if (index != expected++ || !piece.first.landed()) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<int> ReplicatedDdl::Poll(std::stop_token stop) {
  const std::string prefix = keys_.replicated_ddl_prefix();
  ASSIGN_OR_RETURN(meta::RangeResult range,
                   store_->store()->Range(prefix, absl::Now() + call_timeout_));
  std::map<std::pair<std::string, uint64_t>, Group> groups;  // (source, broadcast id)
  for (meta::KeyValue& kv : range.kvs) {
    std::vector<std::string> parts = absl::StrSplit(kv.key.substr(prefix.size()), '/');
    uint64_t broadcast_id = 0;
    if (parts.size() != 3 || !absl::SimpleAtoi(parts[1], &broadcast_id)) {
      return absl::DataLossError(absl::StrCat("metadata key ", kv.key, ": not a DDL copy"));
    }
    Group& g = groups[{parts[0], broadcast_id}];
    if (parts[2] == "done") {
      g.legacy_done = std::move(kv);
      continue;
    }
    ReplicatedDdlPiece piece;
    if (!piece.ParseFromString(kv.value)) {
      return absl::DataLossError(absl::StrCat("metadata key ", kv.key, ": not a DDL copy"));
    }
    const uint32_t index = piece.index();
    g.pieces[index] = {std::move(piece), std::move(kv)};
  }
  // Which of them were applied already: their markers, read in as few requests as etcd allows
  // (its default --max-txn-ops is 128). The markers lie outside the prefix, so a poll reads
  // what is pending, not every DDL the primary ever sent.
  constexpr size_t kMarkersPerRead = 100;
  for (auto next = groups.begin(); next != groups.end();) {
    std::vector<Group*> chunk;
    std::vector<meta::Op> reads;
    for (; next != groups.end() && chunk.size() < kMarkersPerRead; ++next) {
      chunk.push_back(&next->second);
      reads.push_back(
          meta::Op::Get(keys_.replicated_ddl_done(next->first.first, next->first.second)));
    }
    ASSIGN_OR_RETURN(meta::TxnResult read,
                     store_->store()->Txn({}, reads, {}, absl::Now() + call_timeout_));
    for (size_t i = 0; i < chunk.size(); ++i) chunk[i]->applied = !read.results.at(i).kvs.empty();
  }

  int applied = 0;
  std::string blocked;            // a source whose older broadcast is not applied yet
  for (auto& [id, g] : groups) {  // per source, by broadcast id
    if (stop.stop_requested()) break;
    std::vector<meta::Compare> compares;
    std::vector<meta::Op> ops;
    for (const auto& [index, piece] : g.pieces) {
      compares.push_back(meta::Compare::ModRevisionIs(piece.second.key, piece.second.mod_revision));
      ops.push_back(meta::Op::Delete(piece.second.key));
    }
    const std::string done = keys_.replicated_ddl_done(id.first, id.second);
    if (g.legacy_done.has_value()) {  // moved to its place, as applied
      compares.push_back(
          meta::Compare::ModRevisionIs(g.legacy_done->key, g.legacy_done->mod_revision));
      ops.push_back(meta::Op::Delete(g.legacy_done->key));
      if (!g.applied) ops.push_back(meta::Op::Put(done, g.legacy_done->value));
      g.applied = true;
    }
    if (g.applied) {  // copies recorded again after it was applied
      if (!ops.empty()) {
        absl::StatusOr<meta::TxnResult> txn =
            store_->Txn(std::move(compares), std::move(ops), {}, absl::Now() + call_timeout_);
        if (!txn.ok()) return txn.status();
      }
      continue;
    }
    // In the primary's order: a DropCollection must not overtake its CreateCollection (whose
    // copy a node may still have to mark landed).
    if (id.first == blocked) continue;
    if (!AllLanded(g)) {
      blocked = id.first;
      continue;
    }

    const ReplicatedDdlPiece& first = g.pieces.begin()->second.first;
    ASSIGN_OR_RETURN(MutableMessage message, MutableMessage::Decode(first.message()));
    kingfisher::v1::BroadcastTask task;
    task.set_broadcast_id(first.source_broadcast_id());
    task.set_state(kingfisher::v1::BROADCAST_ACKED);
    for (const auto& [index, piece] : g.pieces) {
      absl::StatusOr<MutableMessage> copy = MutableMessage::Decode(piece.first.message());
      if (copy.ok()) task.add_vchannels(std::string(copy->vchannel()));
    }
    auto [ctx, span] = StartSpan(ExtractTraceContext(trace::Context(), message), "wal.bc_callback");
    absl::Status s = [&, &ctx = ctx]() -> absl::Status {
      AckWrites writes;
      if (callback_) {
        ASSIGN_OR_RETURN(writes, callback_(AckCallbackContext{ctx, stop, message, task}));
      }
      compares.insert(compares.end(), writes.compares.begin(), writes.compares.end());
      compares.push_back(meta::Compare::Absent(done));
      ops.insert(ops.end(), writes.ops.begin(), writes.ops.end());
      ops.push_back(meta::Op::Put(done, std::string(MessageTypeName(message.type()))));
      ASSIGN_OR_RETURN(meta::TxnResult txn, store_->Txn(std::move(compares), std::move(ops), {},
                                                        absl::Now() + call_timeout_));
      if (!txn.succeeded) return absl::AbortedError("its records or the catalog changed meanwhile");
      return absl::OkStatus();
    }();
    span->RecordError(s);
    span->End();
    if (!s.ok()) {
      blocked = id.first;
      spdlog::warn("replicate: applying {} of cluster {} (broadcast {}) failed ({}); retrying",
                   MessageTypeName(message.type()), first.source_cluster_id(),
                   first.source_broadcast_id(), s.ToString());
      continue;
    }
    ++applied;
    spdlog::info("replicate: applied {} of cluster {} (broadcast {}) on {} vchannels",
                 MessageTypeName(message.type()), first.source_cluster_id(),
                 first.source_broadcast_id(), task.vchannels_size());
  }
  return applied;
}

}  // namespace kf::streaming::ddl
