#include "search/top_k.h"

#include <algorithm>

namespace kf::search {

void TopK::Push(Hit hit) {
  if (k_ == 0) return;
  if (heap_.size() < k_) {
    heap_.push_back(hit);
    std::push_heap(heap_.begin(), heap_.end());
    return;
  }
  if (!(hit < heap_.front())) return;
  std::pop_heap(heap_.begin(), heap_.end());
  heap_.back() = hit;
  std::push_heap(heap_.begin(), heap_.end());
}

std::vector<Hit> TopK::Take() {
  std::sort_heap(heap_.begin(), heap_.end());
  std::vector<Hit> out = std::move(heap_);
  heap_.clear();
  return out;
}

std::vector<Hit> MergeTopK(const std::vector<std::vector<Hit>>& parts, size_t k) {
  TopK top(k);
  for (const auto& part : parts) {
    for (const Hit& hit : part) top.Push(hit);
  }
  return top.Take();
}

}  // namespace kf::search
