// EtcdMetaStore: the MetaStore of distributed mode, an etcd v3 client over gRPC.
//
// Endpoints are tried in order: a call that fails with UNAVAILABLE moves the store to the next
// endpoint for later calls. Reads and keepalives (safe to repeat) are retried on the remaining
// endpoints within the caller's deadline; mutations are not retried (the first attempt may
// have been applied, and a blind retry of a CAS txn could report failure for a txn that
// succeeded), the caller gets UNAVAILABLE and decides.
//
// Watches: one gRPC Watch stream and one thread per watch. The coordinator holds a handful of
// watches, so a thread each is cheap, and it keeps them independent: a slow callback stalls
// only its own watch, and restarting a broken stream needs no demultiplexing. After a stream
// breaks (etcd restart, endpoint down) the watch is re-created from the revision after the
// last delivered event, with exponential backoff, on the next endpoint; events are therefore
// delivered without gap or duplicate. If that revision was compacted meanwhile, the callback
// gets OUT_OF_RANGE and the watch ends.
//
// Leases: KeepAliveOnce opens a short LeaseKeepAlive stream per call (etcd has no unary
// keepalive); keepalives are rare (a fraction of the TTL), so a stream each costs little and
// needs no background thread. etcd grants whole seconds and at least its minimum TTL
// (1.5 × election timeout, rounded up); the granted TTL is returned.
//
// TLS: an "https://" endpoint is dialed over TLS with Options::tls_credentials (the system's
// roots when null), an "http://" or bare one in plaintext.
//
// Thread-safety: thread-safe. Ownership: owns its channels and watch threads; WatchHandles
// must be destroyed before the store. Errors: gRPC status codes mapped 1:1 (etcd answers
// NOT_FOUND for an unknown lease, OUT_OF_RANGE for a compacted or future revision).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "storage/meta/meta_store.h"

namespace grpc {
class Channel;
class ChannelCredentials;
}  // namespace grpc

namespace kf::meta {

class EtcdMetaStore final : public MetaStore {
 public:
  struct Options {
    // "http://host:port", "https://host:port" or "host:port" (plaintext); at least one.
    std::vector<std::string> endpoints;
    // Of the https endpoints: CA certificates, and a client certificate when etcd asks for one
    // (grpc::SslCredentials). Null: the system's roots, no client certificate.
    std::shared_ptr<grpc::ChannelCredentials> tls_credentials;
    absl::Duration watch_backoff_initial = absl::Milliseconds(50);
    absl::Duration watch_backoff_max = absl::Seconds(2);
  };

  // Splits "http://a:2379,http://b:2379" (docs/semantics.md §8 --etcd) into endpoints.
  static std::vector<std::string> ParseEndpoints(std::string_view list);

  // Creates the channels (connections are made lazily; no call is made here).
  static absl::StatusOr<std::unique_ptr<EtcdMetaStore>> Create(Options options);
  ~EtcdMetaStore() override;

  absl::StatusOr<GetResult> Get(std::string_view key, absl::Time deadline) override;
  absl::StatusOr<RangeResult> Range(std::string_view prefix, absl::Time deadline,
                                    int64_t limit = 0) override;
  absl::StatusOr<int64_t> Put(std::string_view key, std::string_view value, absl::Time deadline,
                              LeaseId lease = kNoLease) override;
  absl::StatusOr<DeleteResult> Delete(std::string_view key, absl::Time deadline) override;
  absl::StatusOr<DeleteResult> DeletePrefix(std::string_view prefix, absl::Time deadline) override;
  absl::StatusOr<TxnResult> Txn(const std::vector<Compare>& compares,
                                const std::vector<Op>& then_ops, const std::vector<Op>& else_ops,
                                absl::Time deadline) override;
  absl::StatusOr<LeaseGrant> GrantLease(absl::Duration ttl, absl::Time deadline) override;
  absl::StatusOr<absl::Duration> KeepAliveOnce(LeaseId lease, absl::Time deadline) override;
  absl::Status RevokeLease(LeaseId lease, absl::Time deadline) override;
  absl::StatusOr<std::unique_ptr<WatchHandle>> Watch(std::string_view prefix,
                                                     int64_t start_revision, WatchCallback callback,
                                                     absl::Time deadline) override;
  absl::Status Compact(int64_t revision, absl::Time deadline) override;

  // The endpoint calls currently go to (for tests and logs).
  std::string current_endpoint() const;

 private:
  class WatchStream;
  struct Channels;

  explicit EtcdMetaStore(Options options, std::shared_ptr<Channels> channels);

  // Runs `call` against the current endpoint; on UNAVAILABLE moves to the next one and, when
  // `retry` is set, tries again until every endpoint was tried once or the deadline passed.
  template <typename Call>
  absl::Status Invoke(bool retry, absl::Time deadline, Call call);

  const Options options_;
  const std::shared_ptr<Channels> channels_;  // shared with watch threads
};

}  // namespace kf::meta
