#include "streaming/ddl/id_block.h"

namespace kf::streaming::ddl {

absl::StatusOr<uint64_t> IdBlock::Next(absl::Time deadline) {
  absl::MutexLock l(&mu_);
  if (next_ == end_) {
    absl::StatusOr<uint64_t> last = store_->Increment(key_, deadline, block_size_);
    if (!last.ok()) return last.status();
    next_ = *last - block_size_ + 1;
    end_ = *last + 1;
  }
  return next_++;
}

}  // namespace kf::streaming::ddl
