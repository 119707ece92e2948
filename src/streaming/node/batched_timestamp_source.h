// BatchedTimestampSource: a streaming node's timeticks, fetched from the coordinator's oracle
// in batches (docs/cluster.md, node 4).
//
// A batch is used only while it is fresh (Options::max_age, default 50 ms): transaction
// keepalives and expiry are measured in the timetick's physical part, so a node must not
// keep handing out timeticks from a batch fetched long ago. Observe(t) drops a batch that does
// not lie above t and makes the next fetch ask for more than t.
//
// Thread-safety: thread-safe; a refill holds the lock across the fetch (the WAL allocates
// under its sequencer lock anyway). Ownership: borrows the fetcher.
// Errors: the fetcher's (UNAVAILABLE while no coordinator answers); nothing is handed out then.
//
// OracleTimestampSource, below, fetches every timestamp on its own: what a strong search starts
// from.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/tso/timestamp_source.h"

namespace kf::streaming {

// One call to the oracle: `count` consecutive timeticks, all above `at_least`.
class TimestampBatchFetcher {
 public:
  struct Batch {
    TimeTick first;
    uint32_t count = 0;
  };
  virtual ~TimestampBatchFetcher() = default;
  virtual absl::StatusOr<Batch> Fetch(uint32_t count, TimeTick at_least, absl::Time deadline) = 0;
};

// Every Allocate asks the oracle (no batch): a timestamp above every one any node has handed
// out before the call, as a strong search needs (a node's batch may lie below another node's).
class OracleTimestampSource final : public TimestampSource {
 public:
  explicit OracleTimestampSource(TimestampBatchFetcher* fetcher,
                                 absl::Duration fetch_timeout = absl::Seconds(2))
      : fetcher_(fetcher), fetch_timeout_(fetch_timeout) {}

  absl::StatusOr<TimeTick> Allocate(uint32_t count = 1) override;
  absl::Status Observe(TimeTick) override { return absl::OkStatus(); }  // the oracle knows

 private:
  TimestampBatchFetcher* const fetcher_;
  const absl::Duration fetch_timeout_;
};

class BatchedTimestampSource final : public TimestampSource {
 public:
  struct Options {
    uint32_t batch = 1024;
    absl::Duration max_age = absl::Milliseconds(50);
    absl::Duration fetch_timeout = absl::Seconds(2);
    std::function<absl::Time()> clock;  // empty = absl::Now
  };

  BatchedTimestampSource(TimestampBatchFetcher* fetcher, Options options);

  absl::StatusOr<TimeTick> Allocate(uint32_t count = 1) override;
  absl::Status Observe(TimeTick t) override;
  // Drops the batch if it does not reach above `t`, so the next Allocate fetches a fresh one:
  // above `t` when `t` came from the oracle, without asking the oracle for more than it has
  // handed out (a caller's `t` never moves the cluster's timestamps, unlike Observe).
  void DropBatchBelow(TimeTick t);

 private:
  absl::Time Now() const { return options_.clock ? options_.clock() : absl::Now(); }

  TimestampBatchFetcher* const fetcher_;
  const Options options_;
  absl::Mutex mu_;
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;       // next timetick of the batch
  uint64_t remaining_ ABSL_GUARDED_BY(mu_) = 0;  // left in the batch
  absl::Time fetched_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t floor_ ABSL_GUARDED_BY(mu_) = 0;  // every allocation must exceed this
};

}  // namespace kf::streaming
