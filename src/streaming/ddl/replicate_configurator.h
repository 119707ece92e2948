// ReplicateConfigurator: changes the cluster's replicate configuration (docs/replication.md
// "Topology"), only ever by an AlterReplicateConfig broadcast:
//   validate (message/replicate_config.h; this cluster must be in it with exactly its own
//   pchannels, in order) -> lock the cluster (exclusive: no other DDL runs meanwhile) ->
//   broadcast AlterReplicateConfig to every pchannel (on its control vchannel
//   `<pchannel>_replicate`; each WAL switches its role at that message) -> callback: the
//   configuration is written to `replicate/config` in the metadata store.
// Get reads that key (an empty configuration when it was never written).
//
// Thread-safety: thread-safe. Ownership: borrows the broadcaster (must outlive it); construct
// it before the broadcaster's Recover (it registers the callback).
// Errors: INVALID_ARGUMENT (the configuration, or this cluster's place in it); the
// broadcaster's otherwise (RESOURCE_ACQUIRED for a non-blocking call on a held lock).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kingfisher/v1/replicate.pb.h"
#include "streaming/cluster_meta.h"
#include "streaming/ddl/broadcaster.h"
#include "trace/context.h"

namespace kf::streaming::ddl {

// The raw vchannel of `pchannel` that carries its AlterReplicateConfig.
std::string ReplicateControlVChannel(const std::string& pchannel);

class ReplicateConfigurator {
 public:
  struct Options {
    std::string cluster_id;
    std::vector<std::string> pchannels;  // the cluster's, in configured order
    absl::Duration call_timeout = absl::Seconds(5);
  };

  ReplicateConfigurator(Broadcaster* broadcaster, const ClusterKeys& keys, Options options);

  // Returns once every pchannel took the configuration and it is in the store.
  absl::Status Alter(const kingfisher::v1::ReplicateConfiguration& config,
                     const trace::Context& ctx, bool blocking, absl::Time deadline);
  absl::StatusOr<kingfisher::v1::ReplicateConfiguration> Get(absl::Time deadline) const;

  const std::string& cluster_id() const { return options_.cluster_id; }
  const std::vector<std::string>& pchannels() const { return options_.pchannels; }

 private:
  absl::Status CheckSelf(const kingfisher::v1::ReplicateConfiguration& config) const;

  Broadcaster* const broadcaster_;
  const ClusterKeys keys_;
  const Options options_;
};

}  // namespace kf::streaming::ddl
