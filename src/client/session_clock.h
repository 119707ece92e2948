// SessionClock: the timetick of the last write each vchannel acknowledged to this client, for
// `session` reads (docs/search.md): a session search or get reads at the newest of its
// collection's vchannels, so it sees every write this client had acknowledged before it
// (read-your-writes) without a fresh timestamp from the oracle.
//
// Thread-safety: thread-safe. Shared by the client and its producers.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "kingfisher/types.h"

namespace kf::client {

// The writes a session read must see: collection data and the commit that makes a txn's
// visible. Nothing else is recorded (a raw produce pays no lock for it).
inline bool IsSessionWrite(kingfisher::MessageType type) {
  return type == kingfisher::MessageType::kInsert || type == kingfisher::MessageType::kDelete ||
         type == kingfisher::MessageType::kCommitTxn;
}

class SessionClock {
 public:
  void Acknowledged(std::string_view vchannel, uint64_t timetick) {
    absl::MutexLock lock(&mu_);
    auto it = last_.find(vchannel);
    if (it == last_.end()) it = last_.emplace(std::string(vchannel), 0).first;
    if (timetick > it->second) it->second = timetick;
  }
  // The newest acknowledged timetick of any of `vchannels`; 0 if none wrote.
  uint64_t LastWrite(const std::vector<std::string>& vchannels) const {
    absl::MutexLock lock(&mu_);
    uint64_t newest = 0;
    for (const std::string& v : vchannels) {
      if (auto it = last_.find(v); it != last_.end() && it->second > newest) newest = it->second;
    }
    return newest;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, uint64_t, std::less<>> last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::client
