#include "logstore/service/registration.h"

#include "common/backoff.h"
#include "common/status_macros.h"
#include "kingfisher/v1/logstore.pb.h"

namespace kf::logstore {

absl::StatusOr<std::unique_ptr<Registration>> Registration::Start(meta::MetaStore* store,
                                                                  std::string key,
                                                                  std::string address,
                                                                  absl::Duration ttl) {
  std::unique_ptr<Registration> r(new Registration());
  r->store_ = store;
  r->key_ = std::move(key);
  kingfisher::v1::LogStoreRegistration reg;
  reg.set_address(address);
  reg.set_id(r->key_);
  r->value_ = reg.SerializeAsString();
  r->ttl_ = ttl;
  RETURN_IF_ERROR(r->Register(absl::Now() + absl::Seconds(5)));
  r->keeper_ = std::jthread([raw = r.get()](std::stop_token stop) { raw->KeepAliveLoop(stop); });
  return r;
}

Registration::~Registration() {
  if (keeper_.joinable()) {
    keeper_.request_stop();
    keeper_.join();
  }
  if (lease_ != meta::kNoLease) (void)store_->RevokeLease(lease_, absl::Now() + absl::Seconds(2));
}

absl::Status Registration::Register(absl::Time deadline) {
  ASSIGN_OR_RETURN(meta::LeaseGrant grant, store_->GrantLease(ttl_, deadline));
  lease_ = grant.id;
  return store_->Put(key_, value_, deadline, lease_).status();
}

void Registration::KeepAliveLoop(std::stop_token stop) {
  const absl::Duration period = ttl_ / 3;
  while (SleepUnlessStopped(period, stop)) {
    auto kept = store_->KeepAliveOnce(lease_, absl::Now() + period);
    if (kept.ok()) continue;
    // Expired (e.g. the store was unreachable for a TTL): register again.
    if (absl::IsNotFound(kept.status())) (void)Register(absl::Now() + period);
  }
}

}  // namespace kf::logstore
