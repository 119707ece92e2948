// IdBlock: ids drawn from a counter in the metadata store (FencedStore::Increment), reserved
// `block_size` at a time, so a DDL pays no store round trip for its ids except once per block.
// Ids are handed out in increasing order, and a later coordinator reserves above everything an
// earlier one reserved, so they increase across coordinators too (the node's broadcast dedupe
// relies on it, docs/ddl-node.md). The unused rest of a block is skipped when its coordinator
// stops: ids have gaps, never repeats.
//
// Thread-safety: thread-safe; callers wait for a reservation in progress rather than reserving
// blocks of their own. Ownership: borrows the store (must outlive it). Errors: those of
// FencedStore::Increment (a failed reservation hands out nothing; the next call tries again).
#pragma once

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "streaming/ddl/fenced_store.h"

namespace kf::streaming::ddl {

class IdBlock {
 public:
  IdBlock(const FencedStore* store, std::string key, uint64_t block_size)
      : store_(store), key_(std::move(key)), block_size_(block_size) {}

  absl::StatusOr<uint64_t> Next(absl::Time deadline);

 private:
  const FencedStore* const store_;
  const std::string key_;
  const uint64_t block_size_;
  absl::Mutex mu_;
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;  // the reserved ids are [next_, end_)
  uint64_t end_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace kf::streaming::ddl
