// Search in the client API (docs/search.md): vector search and gets by primary key over a
// collection's growing segments, answered by the nodes that own its shards and merged here.
//
// Every call reads at one timestamp T (MVCC: the rows inserted at <= T and not deleted at
// <= T, on every shard), chosen by its consistency level:
//   kStrong      every write acknowledged before the call is visible;
//   kSession     this client's own writes: T is the newest timetick its producers had
//                acknowledged on the collection's vchannels (read-your-writes without a fresh
//                timestamp; a client that wrote nothing there reads as kEventually). Another
//                process passes its write's AppendResult::timetick as ReadOptions::timestamp;
//   kBounded     at most `staleness` old (default 1 s): the default;
//   kEventually  whatever each shard has applied.
// A call that cannot reach its T before its deadline fails DEADLINE_EXCEEDED, never answers
// stale. A shard whose pchannel moves is waited for and retried, as appends are.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kingfisher/types.h"

namespace kingfisher {

enum class Consistency { kStrong, kSession, kBounded, kEventually };

// "strong", "session", "bounded", "eventually".
std::string_view ConsistencyName(Consistency c);
// The inverse (case-insensitive); nullopt for anything else.
std::optional<Consistency> ParseConsistency(std::string_view name);

struct ReadOptions {
  Consistency consistency = Consistency::kBounded;
  Duration staleness = std::chrono::seconds(1);  // kBounded
  // T itself when non-zero (every level): another client's write, or a T from an earlier answer.
  // One more than an hour ahead of the server's clock is INVALID_ARGUMENT (a unit mistake).
  TimeTick timestamp;
  // Overall deadline; nullopt means now + ClientOptions::status_timeout.
  std::optional<Deadline> deadline;
  // The caller's trace context: the parent of the call's `kf.search` / `kf.get` span (a new
  // trace when invalid; docs/search.md).
  TraceContext trace;
};

inline constexpr uint32_t kMaxTopK = 16384;

struct SearchOptions : ReadOptions {
  uint32_t topk = 10;             // 1..kMaxTopK
  std::string partition;          // "" = every partition
  std::optional<int64_t> min_pk;  // an inclusive pk range
  std::optional<int64_t> max_pk;
  // The search width: IVF lists probed per indexed chunk (0: the server's default, 16). More
  // is slower and closer to exact; the newest, unindexed rows are always scored exactly.
  uint32_t nprobe = 0;
};

struct SearchHit {
  int64_t pk = 0;
  // L2: the squared distance (smaller is closer); IP: the inner product, COSINE: the cosine
  // similarity (larger is closer).
  float distance = 0;
};

struct SearchResult {
  std::vector<std::vector<SearchHit>> hits;  // per query, best first
  TimeTick timestamp;  // the T it answered at (kEventually: the first shard's)
};

struct Row {
  int64_t pk = 0;
  std::vector<float> vector;
};

struct GetResult {
  std::vector<Row> rows;  // the visible rows of the pks asked for
  TimeTick timestamp;
};

}  // namespace kingfisher
