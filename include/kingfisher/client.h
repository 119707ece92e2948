// Client: the entry point of the Kingfisher C++ client library.
//
// A Client holds one gRPC channel to an endpoint (the standalone server, the coordinator or any
// streaming node) and creates Producers and Consumers that share it. Connect does not block on
// the network: the channel connects lazily and reconnects by itself; the first RPC pays for it.
// Producers and Consumers open their streams wait-for-ready (bounded by the attempt's or
// Next's deadline), so after a server restart they resume as soon as it listens again.
//
// Thread-safety: every method is thread-safe. Ownership: Producers and Consumers share the
// channel, so they may outlive the Client that created them.
//
// Performance: Debian's absl checks lock order on every Mutex acquisition (deadlock detection
// is on in its build). Production programs should turn it off at startup, as kingfisher and
// kfctl do: absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore).
//
// Errors (every method, exhaustively):
//   Connect        INVALID_ARGUMENT  empty endpoint, non-positive timeouts, bad retry policy.
//   CreateProducer INVALID_ARGUMENT  a batching bound below 1.
//   CreateConsumer INVALID_ARGUMENT  the vchannel does not name a pchannel ("kf-dml_<i>_<x>"),
//                                    or a StartFrom/StartAfter policy without a valid id.
//   Collection calls: INVALID_ARGUMENT (bad name, dim, metric, shards, database, dropping
//                  `_default`: never sent; or the server's verdict),
//                  ALREADY_EXISTS, NOT_FOUND, ABORTED (RESOURCE_ACQUIRED with no_wait), and
//                  UNAVAILABLE (the endpoint is unreachable or is not the acting coordinator)
//                  or DEADLINE_EXCEEDED: a DDL MAY OR MAY NOT HAVE BEEN APPLIED (Describe
//                  tells; one that was persisted completes anyway), except when the message
//                  says "nothing was sent" (no connection before the deadline). A DDL is
//                  never retried; a read that the transport failed (the server went away
//                  mid-call) is sent again until its deadline.
//                  Every call waits for the connection (wait-for-ready) until its deadline:
//                  DdlOptions::deadline for DDL, now + status_timeout for the others.
//   AllocateIds    INVALID_ARGUMENT for a bad count; UNAVAILABLE when the endpoint is not
//                  the coordinator or unreachable; DEADLINE_EXCEEDED; INTERNAL for an answer
//                  that is not the requested range of int64 ids. Sent again, as a read, when
//                  the transport failed (the ids of a lost answer are skipped).
//   GetStatus      UNAVAILABLE       the endpoint is unreachable (nothing changed server-side);
//                  DEADLINE_EXCEEDED no answer within options().status_timeout;
//                  UNIMPLEMENTED     the endpoint serves no StreamingCoord (a plain node);
//                  any other code    as returned by the server.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kingfisher/collections.h"
#include "kingfisher/consumer.h"
#include "kingfisher/producer.h"
#include "kingfisher/search.h"

namespace kingfisher {

// Exponential backoff with equal jitter between retries of one operation. Retries always stop
// at the operation's deadline; max_attempts additionally bounds them (0 = only the deadline).
struct RetryPolicy {
  Duration initial_backoff = std::chrono::milliseconds(20);
  Duration max_backoff = std::chrono::seconds(1);
  double multiplier = 2.0;
  int max_attempts = 0;
};

// TLS on the connections to Kingfisher servers (docs/security.md). Off by default: plaintext.
struct TlsOptions {
  bool enabled = false;
  // PEM file of the CA certificates that verify the servers; empty: the system's roots.
  std::string ca_file;
  // PEM files of this client's certificate chain and private key, for servers that require
  // client certificates (mutual TLS); both or neither.
  std::string cert_file;
  std::string key_file;
};

struct ClientOptions {
  // host:port of the standalone server, the coordinator or any node.
  std::string endpoint = "127.0.0.1:19530";
  // Overall deadline of one Append (all attempts and backoff included), unless the call
  // passes its own.
  Duration append_timeout = std::chrono::seconds(30);
  // Deadline of one append attempt, waiting for the connection included (streams are opened
  // wait-for-ready); an attempt that gets no answer in time is treated as an ambiguous failure
  // (the stream is reset and the append retried with the same `_ik`).
  Duration attempt_timeout = std::chrono::seconds(10);
  // Deadline of unary calls such as GetStatus, DescribeCollection, AllocateIds.
  Duration status_timeout = std::chrono::seconds(10);
  // Deadline of one DDL call (CreateCollection, ...) unless the call passes its own.
  Duration ddl_timeout = std::chrono::seconds(60);
  // The database of every collection call.
  std::string database = "default";
  RetryPolicy retry;
  TlsOptions tls;
};

// kfctl status / StreamingCoord.GetStatus.
struct NodeStatus {
  int64_t id = 0;
  std::string address;
  std::string state;
};
// One shard of a pchannel the answering server serves (docs/recovery-storage.md).
struct ShardStatus {
  std::string vchannel;
  int64_t collection_id = 0;
  uint64_t rows = 0;          // in memory, growing and sealed
  uint64_t memory_bytes = 0;  // rows and indexes
  uint32_t sealed_segments = 0;
  uint32_t flushed_segments = 0;  // of those, in the object store
};
// What the answering server holds of a pchannel it serves.
struct PChannelData {
  uint64_t wal_bytes = 0;  // its log in the backend (0: unknown)
  uint64_t tsafe = 0;
  uint64_t checkpoint_timetick = 0;  // 0: no checkpoint
  double checkpoint_lag_seconds = 0;
  uint64_t checkpoint_lag_messages = 0;
  int64_t last_checkpoint_unix_ms = 0;  // 0: none since it opened there
  std::string replay_from;              // where a restart reads its log from
  std::string truncated_below;          // its last truncation point ("": none)
  std::string last_checkpoint_error;    // "": none
  std::vector<ShardStatus> shards;
};
struct PChannelStatus {
  std::string pchannel;
  int64_t node = 0;
  int64_t term = 0;
  std::string state;  // UNINITIALIZED | ASSIGNING | ASSIGNED | UNAVAILABLE | RECOVERING
  std::optional<PChannelData> data;  // only for the pchannels the answering server serves
};
struct ClusterStatus {
  std::vector<NodeStatus> nodes;
  std::vector<PChannelStatus> pchannels;
};

class Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Connect(ClientOptions options);
  virtual ~Client();

  const ClientOptions& options() const;

  // A producer appending through this client's endpoint (one Produce stream per pchannel).
  absl::StatusOr<std::unique_ptr<Producer>> CreateProducer(ProducerOptions options = {});
  // A consumer of one vchannel (or a whole pchannel when options.vchannel names one).
  absl::StatusOr<std::unique_ptr<Consumer>> CreateConsumer(ConsumerOptions options);
  // The coordinator's view of nodes and pchannel assignments.
  absl::StatusOr<ClusterStatus> GetStatus();

  // Collection DDL and catalog reads (docs/semantics.md §5), in options().database, answered by the
  // endpoint's Collections service (the coordinator or the standalone server). A DDL returns
  // once it is applied on every vchannel and its catalog transition committed.
  absl::StatusOr<CollectionInfo> CreateCollection(const CollectionSpec& spec,
                                                  DdlOptions options = {});
  absl::Status DropCollection(const std::string& name, DdlOptions options = {});
  absl::StatusOr<CollectionInfo> DescribeCollection(const std::string& name);
  absl::StatusOr<std::vector<CollectionInfo>> ListCollections();
  absl::Status CreatePartition(const std::string& collection, const std::string& partition,
                               DdlOptions options = {});
  absl::Status DropPartition(const std::string& collection, const std::string& partition,
                             DdlOptions options = {});
  // Seals every growing segment of the collection and returns once each shard's segments are
  // in the object store under a committed checkpoint (docs/recovery-storage.md), one entry per
  // shard. DEADLINE_EXCEEDED if a shard's node has not checkpointed by the deadline (a node
  // without an object store never does).
  absl::StatusOr<std::vector<FlushedShard>> Flush(const std::string& name, DdlOptions options = {});
  // The best options.topk rows of `collection` for each query (`queries` row-major, a multiple
  // of the collection's dim), from every shard at one timestamp (search.h).
  // INVALID_ARGUMENT: no queries, a length that is not a multiple of the dim, a NaN or
  // infinite component, topk outside 1..kMaxTopK, min_pk > max_pk, kSession without a
  // timestamp; NOT_FOUND: no such collection or partition; DEADLINE_EXCEEDED.
  absl::StatusOr<SearchResult> Search(const std::string& collection,
                                      const std::vector<float>& queries,
                                      const SearchOptions& options = {});
  // The visible rows of `pks` (INVALID_ARGUMENT when empty), each from its own shard.
  absl::StatusOr<GetResult> Get(const std::string& collection, const std::vector<int64_t>& pks,
                                const ReadOptions& options = {});
  // `count` (1..65536) ids unique across the cluster and increasing, from the coordinator's
  // timestamp oracle: primary keys for inserted rows.
  absl::StatusOr<std::vector<int64_t>> AllocateIds(uint32_t count);

  // The library's internals (an incomplete type here).
  class Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kingfisher
