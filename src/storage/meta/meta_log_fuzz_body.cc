#include "storage/meta/meta_log_fuzz_body.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "common/coding.h"
#include "common/crc32c.h"
#include "storage/meta/kv_state.h"
#include "storage/meta/meta_log.h"

namespace kf::meta {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "meta log fuzz invariant broken: %s\n", what);
    std::abort();
  }
}

// Each mutation's canonical bytes (EncodeMutation), to compare two parses.
std::string Canonical(const ParsedLog& log) {
  std::string out;
  for (const Mutation& m : log.mutations) out += EncodeLogRecord(EncodeMutation(m));
  return out;
}

void CheckLog(std::string_view bytes) {
  absl::StatusOr<ParsedLog> log = ParseMetaLog(bytes);
  if (!log.ok()) {
    Check(log.status().code() == absl::StatusCode::kDataLoss, "a bad log is DATA_LOSS");
    return;
  }
  Check(log->valid_bytes <= bytes.size(), "the intact prefix lies within the file");
  Check(log->mutations.empty() || log->valid_bytes >= kLogHeaderSize,
        "mutations come after the header");

  // What recovery keeps (the file cut to the intact prefix) parses to the same mutations.
  absl::StatusOr<ParsedLog> kept = ParseMetaLog(bytes.substr(0, log->valid_bytes));
  Check(kept.ok(), "the intact prefix parses");
  Check(kept->valid_bytes == log->valid_bytes, "the intact prefix is all intact");
  Check(Canonical(*kept) == Canonical(*log), "the intact prefix has the same mutations");

  // Written again by a writer, the mutations read back the same.
  if (!log->mutations.empty()) {
    const std::string rebuilt = EncodeLogHeader(log->seq) + Canonical(*log);
    absl::StatusOr<ParsedLog> again = ParseMetaLog(rebuilt);
    Check(again.ok(), "a rewritten log parses");
    Check(again->valid_bytes == rebuilt.size(), "a rewritten log is intact");
    Check(again->seq == log->seq, "a rewritten log keeps its seq");
    Check(Canonical(*again) == Canonical(*log), "a rewritten log has the same mutations");
  }

  // Replayed as recovery does: a mutation that does not fit the state is DATA_LOSS.
  KvState state(/*history_limit=*/64);
  for (const Mutation& m : log->mutations) {
    absl::Status s = state.Apply(m);
    if (!s.ok()) {
      Check(s.code() == absl::StatusCode::kDataLoss, "a replay that does not fit is DATA_LOSS");
      break;
    }
  }
}

void CheckSnapshot(std::string_view bytes) {
  absl::StatusOr<Snapshot> snapshot = DecodeSnapshot(bytes);
  if (!snapshot.ok()) {
    Check(snapshot.status().code() == absl::StatusCode::kDataLoss, "a bad snapshot is DATA_LOSS");
    return;
  }
  const std::string encoded = EncodeSnapshot(*snapshot);
  absl::StatusOr<Snapshot> again = DecodeSnapshot(encoded);
  Check(again.ok(), "a re-encoded snapshot decodes");
  Check(EncodeSnapshot(*again) == encoded, "a snapshot's encoding is stable");
  // Restored, then written to as recovery's replay and the live store would.
  KvState state(/*history_limit=*/64);
  const LeaseId lease = snapshot->next_lease_id;
  Mutation write{.kind = Mutation::Kind::kWrite, .revision = snapshot->revision + 1};
  for (const KeyValue& kv : snapshot->kvs) {
    write.writes.push_back({.key = kv.key, .value = "v", .lease = lease});
    if (write.writes.size() == 4) break;
  }
  if (write.writes.empty()) write.writes.push_back({.key = "k", .value = "v", .lease = lease});
  state.Restore(snapshot->revision, snapshot->next_lease_id, std::move(snapshot->leases),
                std::move(snapshot->kvs));
  const Mutation grant{.kind = Mutation::Kind::kLeaseGrant, .lease = lease, .ttl_ms = 1000};
  Check(state.Apply(grant).ok(), "the next lease id of a snapshot can be granted");
  absl::Status s = state.Apply(write);
  Check(s.ok() || s.code() == absl::StatusCode::kDataLoss, "a write after a snapshot fits");
  if (!s.ok() || write.revision == kMaxCounter) return;
  Mutation revoke{
      .kind = Mutation::Kind::kLeaseRevoke, .revision = write.revision + 1, .lease = lease};
  for (const Mutation::Write& w : write.writes) {
    revoke.writes.push_back({.is_delete = true, .key = w.key});
  }
  s = state.Apply(revoke);
  Check(s.ok() || s.code() == absl::StatusCode::kDataLoss, "a revoke after a snapshot fits");
}

}  // namespace

void RunMetaLogFuzzInput(std::string_view data) {
  CheckLog(data);
  CheckLog(EncodeLogHeader(7) + EncodeLogRecord(data));
  CheckSnapshot(data);
  std::string sealed(data);  // the snapshot's trailing checksum, made valid
  PutFixed32(&sealed, crc32c::Mask(crc32c::Value(data)));
  CheckSnapshot(sealed);
}

}  // namespace kf::meta
