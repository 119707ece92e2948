// TopK: the k best hits of one query, by score (lower is better, metric.h), ties broken by the
// smaller pk so that an exact search has exactly one answer; and the merge of several partial
// answers (segments, shards) into one.
//
// Thread-safety: a TopK is used by one thread; MergeTopK is a pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kf::search {

struct Hit {
  float score = 0;  // lower is better (metric.h)
  int64_t pk = 0;

  friend bool operator<(const Hit& a, const Hit& b) {
    return a.score < b.score || (a.score == b.score && a.pk < b.pk);
  }
  friend bool operator==(const Hit& a, const Hit& b) = default;
};

class TopK {
 public:
  explicit TopK(size_t k) : k_(k) { heap_.reserve(k); }

  size_t k() const { return k_; }
  // Whether a hit with `score` could still enter: lets a scan skip the rest of its work.
  bool Admits(float score) const { return heap_.size() < k_ || score <= heap_.front().score; }
  void Push(Hit hit);
  // The hits, best first; the TopK is empty afterwards.
  std::vector<Hit> Take();

 private:
  size_t k_;
  std::vector<Hit> heap_;  // a max-heap: the worst kept hit on top
};

// The best `k` of all `parts` (each in any order), best first.
std::vector<Hit> MergeTopK(const std::vector<std::vector<Hit>>& parts, size_t k);

}  // namespace kf::search
