#include "wal/run.h"

#include "wal/completion.h"

namespace kf::wal {

RunRef Run::Create(Completion* completion, size_t size) {
  return RunRef(new Run(completion, size));
}

Run::Run(Completion* completion, size_t size) : completion_(completion), entries_(size) {
  for (AppendContext& a : entries_) a.run = this;
}

void Run::Release(uint32_t n) {
  if (refs_.fetch_sub(n, std::memory_order_acq_rel) != n) return;
  completion_->Complete(*this);
  delete this;
}

}  // namespace kf::wal
