#include "wal/backends/quorum/recovery.h"

#include <future>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/errors.h"
#include "wal/backends/quorum/logstore_client.h"

namespace kf::wal::quorum {
namespace {

// Copies [from, to) of `log`/`segment` from `src` to `dst` at `epoch`.
absl::Status Copy(LogStoreClient* src, LogStoreClient* dst, const std::string& log,
                  uint64_t segment, uint64_t from, uint64_t to, uint64_t epoch,
                  absl::Duration rpc_timeout) {
  while (from < to) {
    kingfisher::v1::ReadEntriesRequest read;
    read.set_log(log);
    read.set_segment(segment);
    read.set_from_entry(from);
    read.set_to_entry(to);
    auto r = src->ReadEntries(read, absl::Now() + rpc_timeout);
    if (!r.ok()) return r.status();
    if (r->entries().empty()) {
      return absl::UnavailableError(absl::StrCat(src->address(), " no longer serves entry ", from));
    }
    kingfisher::v1::AddEntriesRequest add;
    add.set_log(log);
    add.set_segment(segment);
    add.set_epoch(epoch);
    add.set_first_entry(from);
    *add.mutable_entries() = std::move(*r->mutable_entries());
    auto w = dst->AddEntries(add, absl::Now() + rpc_timeout);
    if (!w.ok()) return w.status();
    if (w->durable_end() <= from) {
      return absl::InternalError(absl::StrCat(dst->address(), " made no progress at ", from));
    }
    from = w->durable_end();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SegmentRecord> RecoverSegment(LogStorePool* pool, const std::string& log,
                                             uint64_t segment, SegmentRecord record, uint64_t epoch,
                                             absl::Duration rpc_timeout) {
  const auto& ensemble = record.meta.ensemble();
  std::vector<std::future<absl::StatusOr<kingfisher::v1::FenceResponse>>> fences;
  for (const std::string& address : ensemble) {
    fences.push_back(std::async(std::launch::async, [&, client = pool->Get(address)] {
      kingfisher::v1::FenceRequest req;
      req.set_log(log);
      req.set_segment(segment);
      req.set_epoch(epoch);
      return client->Fence(req, absl::Now() + rpc_timeout);
    }));
  }
  struct Answer {
    std::shared_ptr<LogStoreClient> client;
    uint64_t end;
    uint64_t bytes;
  };
  std::vector<Answer> answers;
  std::vector<std::string> errors;
  absl::Status fenced;
  for (int i = 0; i < ensemble.size(); ++i) {
    auto r = fences[static_cast<size_t>(i)].get();
    if (r.ok()) {
      answers.push_back({pool->Get(ensemble[i]), r->durable_end(), r->durable_bytes()});
    } else {
      if (IsFenced(r.status())) fenced = r.status();
      errors.push_back(std::string(r.status().message()));
    }
  }
  if (!fenced.ok()) return fenced;
  const std::string where = absl::StrCat("quorum WAL ", log, " segment ", segment);
  if (answers.size() < 2) {
    return absl::UnavailableError(absl::StrCat("cannot recover ", where, ": only ", answers.size(),
                                               " of ", ensemble.size(), " logstores answered (",
                                               absl::StrJoin(errors, "; "), ")"));
  }
  const Answer* best = &answers[0];
  for (const auto& a : answers) {
    if (a.end > best->end) best = &a;
  }
  // Everything any answering replica holds becomes part of the log: it may have been
  // acknowledged (an acknowledged entry is on 2 replicas, so on one of any 2 that answer).
  int holders = 0;
  for (const auto& a : answers) {
    if (a.end == best->end) {
      ++holders;
      continue;
    }
    absl::Status s = Copy(best->client.get(), a.client.get(), log, segment, a.end, best->end, epoch,
                          rpc_timeout);
    if (s.ok()) {
      ++holders;
    } else if (IsFenced(s)) {
      return s;
    } else {
      errors.push_back(std::string(s.message()));
    }
  }
  if (holders < 2) {
    return absl::UnavailableError(absl::StrCat("cannot recover ", where, ": entries up to ",
                                               best->end, " are on fewer than 2 logstores (",
                                               absl::StrJoin(errors, "; "), ")"));
  }
  record.meta.set_sealed(true);
  record.meta.set_end(best->end);
  record.meta.set_bytes(best->bytes);
  return record;
}

}  // namespace kf::wal::quorum
