// The quorum WAL backend (docs/semantics.md §4 item 3, Woodpecker's QuorumBuffer mode): each
// pchannel's log is a sequence of segments; a segment's entries are replicated to an ensemble of 3
// logstores (`kingfisher run logstore`, src/logstore) and acknowledged once 2 have them durable.
// Segment metadata lives in the MetaStore; a new writer fences the last open segment's ensemble by
// epoch, recovers its tail from a quorum, seals it and starts a new segment. Design and protocol:
// docs/quorum-wal.md.
//
// Thread-safety: the opener and its backends are thread-safe. Ownership: `meta` and
// `object_store` are borrowed and must outlive the opener; the opener (its options and logstore
// connections) must outlive every backend and scanner it returned.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"
#include "storage/meta/meta_store.h"
#include "storage/object/object_store.h"
#include "wal/backend.h"

namespace kf::wal::quorum {

struct QuorumOpenerOptions {
  meta::MetaStore* meta = nullptr;            // required
  std::string meta_prefix = "kf/wal/quorum";  // <prefix>/<pchannel>/{owner,seg/...}
  // Where ensembles come from: this static list of HOST:PORT, or when empty the registrations
  // (kingfisher.v1.LogStoreRegistration values) under `registry_prefix` in `meta`.
  std::vector<std::string> logstores;
  std::string registry_prefix = "kf/logstores/";
  // Reads fall back to the segment objects logstores uploaded here when no replica answers.
  object::ObjectStore* object_store = nullptr;
  std::string object_prefix = "kf/wal/quorum";
  uint64_t segment_bytes = 32ull << 20;  // roll to a new segment (and ensemble) past this size
  absl::Duration segment_age = absl::Minutes(10);  // ... or past this age
  uint64_t max_batch_bytes = 4ull << 20;           // one AddEntries carries at most this much
  uint64_t max_queue_bytes = 256ull << 20;         // not yet acknowledged bytes: RESOURCE_EXHAUSTED
  uint64_t max_entry_bytes = 80ull << 20;          // larger entries: INVALID_ARGUMENT
  absl::Duration rpc_timeout = absl::Seconds(5);
  // Of the connections to the logstores (wire/credentials.h); null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // An entry not durable on 2 logstores this long after its Append fails the writer: its
  // callback and every later one get UNAVAILABLE, and so do later Appends (reopen to resume).
  absl::Duration ack_timeout = absl::Seconds(10);
  // Test hook: runs on a replica's sender thread before each AddEntries to `address`.
  std::function<void(const std::string& address)> before_send;
  // Test hook: runs on the acker thread before it acknowledges a group of entries.
  std::function<void()> before_ack;
};

// Open() errors: FENCED (a higher term owns the log, or a newer writer fenced this one during
// recovery), UNAVAILABLE (fewer than 2 of the last segment's ensemble answered, fewer than 3
// logstores known, the metadata store is unreachable), NOT_FOUND (read-only open of a log that
// was never written), INVALID_ARGUMENT (bad pchannel name).
std::unique_ptr<WalOpener> NewQuorumOpener(QuorumOpenerOptions options);

}  // namespace kf::wal::quorum
