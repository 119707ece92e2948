// WalRegistry: how the RPC layer finds the open Wal of a pchannel on this node.
//
// The standalone server registers every pchannel at start (StaticWalRegistry); the distributed
// streaming node will implement the same interface over its assignment state, so the
// StreamingNode service is shared by both.
//
// Thread-safety: implementations are thread-safe. Ownership: the registry shares each Wal with
// the streams using it (std::shared_ptr), so a stream may outlive the Wal's removal from the
// registry; closing a Wal is the owner's job, not the registry's.
// Errors (docs/semantics.md §3): a pchannel that does not exist in the cluster is INVALID_ARGUMENT;
// one that exists but is not on this node is CHANNEL_NOT_EXIST (ABORTED).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/strong_id.h"
#include "wal/wal.h"

namespace kf::streaming::node {

class WalRegistry {
 public:
  struct PChannelInfo {
    std::string pchannel;
    Term term;
    int readers = 0;
  };

  virtual ~WalRegistry() = default;

  virtual absl::StatusOr<std::shared_ptr<wal::Wal>> Get(std::string_view pchannel) const = 0;

  // Every pchannel this node serves, sorted by name.
  virtual std::vector<PChannelInfo> List() const = 0;
};

// The Wals a streaming node has open right now (docs/cluster.md): opened and closed as the
// node follows its assignments. A pchannel of the cluster that is not open here is
// CHANNEL_NOT_EXIST (ABORTED: the client re-resolves), a name outside the cluster is
// INVALID_ARGUMENT. Thread-safe.
class DynamicWalRegistry final : public WalRegistry {
 public:
  explicit DynamicWalRegistry(std::vector<std::string> cluster_pchannels);

  absl::StatusOr<std::shared_ptr<wal::Wal>> Get(std::string_view pchannel) const override;
  std::vector<PChannelInfo> List() const override;

  // Makes `wal` the one served for its pchannel; returns the one it replaces (to be closed
  // by the caller), if any.
  std::shared_ptr<wal::Wal> Put(std::shared_ptr<wal::Wal> wal);
  // Stops serving `pchannel`; returns its Wal (to be closed by the caller), if it was open.
  std::shared_ptr<wal::Wal> Remove(std::string_view pchannel);

 private:
  const std::vector<std::string> cluster_pchannels_;  // sorted
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<wal::Wal>, std::less<>> wals_ ABSL_GUARDED_BY(mu_);
};

// The Wal of `pchannel` if this node serves it at `term` (0 = any term): a request from a client
// with another term is UNMATCHED_CHANNEL_TERM (its view of the assignment is stale).
absl::StatusOr<std::shared_ptr<wal::Wal>> GetAtTerm(const WalRegistry& registry,
                                                    std::string_view pchannel, int64_t term);

// A fixed set of Wals, registered before serving starts (standalone). Add is not
// synchronised with Get: finish adding before sharing the registry.
class StaticWalRegistry final : public WalRegistry {
 public:
  void Add(std::shared_ptr<wal::Wal> wal);

  absl::StatusOr<std::shared_ptr<wal::Wal>> Get(std::string_view pchannel) const override;
  std::vector<PChannelInfo> List() const override;

  // The registered Wals, in name order (for closing them at shutdown).
  std::vector<std::shared_ptr<wal::Wal>> All() const;

 private:
  std::vector<std::shared_ptr<wal::Wal>> wals_;  // sorted by pchannel
};

}  // namespace kf::streaming::node
