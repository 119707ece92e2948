// Failover trials of cluster_bench (issue 4): the time from kill -9 of the node that owns a
// pchannel to the first acknowledged append on that pchannel.
//
// One producer per pchannel appends one message at a time throughout. Each trial waits for a
// steady cluster (every node ONLINE, every pchannel ASSIGNED, load balanced) and for every
// producer to be acknowledged since, picks pchannel (trial % pchannels), and has its producer
// kill the owner right after an acknowledgement: nothing is in flight at the kill, so every
// later acknowledgement comes from the new owner (an answer the dead node sent just before
// dying cannot pass for a failover), and the next append leaves at once. The figure is the
// time from just before the kill to that append's acknowledgement; the coordinator's view is
// polled meanwhile for when the pchannel was ASSIGNED elsewhere. The killed node is then
// restarted, so every trial starts from the same cluster shape.
//
// Thread-safety: one call at a time. Ownership: borrows the cluster. Errors: a cluster that
// does not become steady, or a failover that does not finish within 60 s, ends the process.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "local_cluster.h"

namespace kf::bench {

struct FailoverOptions {
  int trials = 10;
  size_t payload_bytes = 1024;
};

struct FailoverResult {
  std::vector<double> first_ack;    // seconds from the kill, one per trial
  std::vector<double> reassigned;   // seconds from the kill to ASSIGNED on another node
  std::vector<std::string> errors;  // appends that failed (none expected)
};

FailoverResult RunFailoverTrials(LocalCluster& cluster, const FailoverOptions& options);

}  // namespace kf::bench
