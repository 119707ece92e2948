// Registration: keeps a logstore listed as live under `<prefix><id>` in the metadata store,
// attached to a lease it keeps alive, so writers choose ensembles from live logstores. After a
// crash the key disappears with the lease TTL.
//
// Thread-safety: thread-safe. Ownership: owns the keepalive thread; borrows the store, which
// must outlive it. Errors: Start returns the store's error of the first grant/put; later
// failures are retried (a lost lease is re-granted and the key re-put).
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "storage/meta/meta_store.h"

namespace kf::logstore {

class Registration {
 public:
  // `key` = <prefix><id>; the value is a kingfisher.v1.LogStoreRegistration.
  static absl::StatusOr<std::unique_ptr<Registration>> Start(meta::MetaStore* store,
                                                             std::string key, std::string address,
                                                             absl::Duration ttl);
  // Stops the keepalive and revokes the lease (the key goes at once).
  ~Registration();

 private:
  Registration() = default;
  absl::Status Register(absl::Time deadline);
  void KeepAliveLoop(std::stop_token stop);

  meta::MetaStore* store_ = nullptr;
  std::string key_;
  std::string value_;
  absl::Duration ttl_;
  meta::LeaseId lease_ = meta::kNoLease;  // keepalive thread only after Start
  std::jthread keeper_;
};

}  // namespace kf::logstore
