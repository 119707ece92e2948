// kfctl insert / delete: rows into a collection's shards (docs/collections-client.md).
//
// insert: Describe the collection (its dim and vchannels), then in windows of rows (at most
// 65536, the AllocateIds bound, and ~64 MiB of vectors): allocate the window's pks, get its
// vectors (random or from the file), route each row to its shard (ShardOfPk) and send each
// shard's rows as Insert messages of at most 1000 rows and ~1 MiB, round-robin over the
// shards, at most kMaxInFlight in flight. Every acknowledged message prints one line.
// --txn: one transaction per shard on its vchannel (a transaction spans one vchannel); after
// every body is acknowledged the shards commit one after another, each printing its lines once
// its commit is acknowledged. Progress goes to stderr every second (rewritten in place on a
// terminal). A failed commit rolls back the shards after it; those before it
// stay committed (their lines are printed): a multi-shard --txn is atomic per shard only.
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/render.h"
#include "cli/vector_file.h"
#include "common/errors.h"
#include "kingfisher/client.h"
#include "message/payload.h"

namespace kf::cli {
namespace {

using kingfisher::AppendResult;
using kingfisher::CollectionInfo;

constexpr uint64_t kMaxWindowRows = 65536;  // Client::AllocateIds' bound
constexpr size_t kMaxWindowBytes = size_t{64} << 20;
constexpr size_t kMaxRowsPerMessage = 1000;
constexpr size_t kMaxMessageBytes = size_t{1} << 20;
constexpr uint64_t kMaxInFlight = 8;

size_t RowBytes(uint32_t dim) { return size_t{dim} * sizeof(float) + sizeof(int64_t); }

// Rows per Insert message: at most 1000 and about 1 MiB of pks and vectors (at least 1).
size_t RowsPerMessage(uint32_t dim) {
  return std::clamp<size_t>(kMaxMessageBytes / RowBytes(dim), 1, kMaxRowsPerMessage);
}

// Fills `out` with the vectors of rows [first, first + n) (n * dim values).
using RowSource = std::function<void(uint64_t first, uint64_t n, std::vector<float>* out)>;

class Inserter {
 public:
  Inserter(const InsertArgs& args, const CollectionInfo& collection, kingfisher::Client* client,
           kingfisher::Producer* producer, std::FILE* out, std::FILE* err)
      : args_(args),
        collection_(collection),
        client_(client),
        producer_(producer),
        out_(out),
        err_(err),
        txns_(collection.vchannels.size()),
        txn_acks_(collection.vchannels.size()) {}

  // Inserts `total` rows from `source`; returns the first error (after everything in flight
  // completed and, with --txn, the transactions were committed or rolled back).
  absl::Status Run(uint64_t total, const RowSource& source) {
    total_ = total;
    {
      absl::MutexLock l(&mu_);
      started_ = last_progress_ = absl::Now();
    }
    const uint64_t window = std::clamp<uint64_t>(kMaxWindowBytes / RowBytes(collection_.dim),
                                                 RowsPerMessage(collection_.dim), kMaxWindowRows);
    std::vector<float> vectors;
    for (uint64_t first = 0; first < total && Healthy(); first += window) {
      const uint64_t n = std::min(window, total - first);
      auto pks = client_->AllocateIds(static_cast<uint32_t>(n));
      if (!pks.ok()) {
        Fail(pks.status());
        break;
      }
      source(first, n, &vectors);
      SendWindow(*pks, vectors);
    }
    {
      absl::MutexLock l(&mu_);
      auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; };
      mu_.Await(absl::Condition(&drained));
      if (tty_ && progress_shown_) {  // the final count, and the line ended
        PrintProgress(absl::Now());
        std::fputc('\n', err_);
      }
    }
    if (!args_.txn) return FirstError();
    if (!FirstError().ok()) {
      RollbackFrom(0);
      return FirstError();
    }
    return CommitAll();
  }

 private:
  bool Healthy() {
    absl::MutexLock l(&mu_);
    return first_error_.ok();
  }
  absl::Status FirstError() {
    absl::MutexLock l(&mu_);
    return first_error_;
  }
  void Fail(const absl::Status& s) {
    absl::MutexLock l(&mu_);
    if (first_error_.ok()) first_error_ = s;
  }

  // Routes the window's rows to their shards and sends them, one message per chunk of a
  // shard's rows, taking the shards in turn.
  void SendWindow(const std::vector<int64_t>& pks, const std::vector<float>& vectors) {
    const uint32_t shards = static_cast<uint32_t>(collection_.vchannels.size());
    const uint32_t dim = collection_.dim;
    std::vector<std::vector<size_t>> rows(shards);
    for (size_t i = 0; i < pks.size(); ++i) {
      rows[kingfisher::ShardOfPk(pks[i], shards)].push_back(i);
    }
    const size_t per_message = RowsPerMessage(dim);
    for (size_t start = 0;; start += per_message) {
      bool any = false;
      for (uint32_t shard = 0; shard < shards; ++shard) {
        if (start >= rows[shard].size()) continue;
        any = true;
        const size_t end = std::min(rows[shard].size(), start + per_message);
        std::vector<int64_t> chunk_pks;
        std::vector<float> chunk_vectors;
        chunk_pks.reserve(end - start);
        chunk_vectors.reserve((end - start) * dim);
        for (size_t k = start; k < end; ++k) {
          const size_t row = rows[shard][k];
          chunk_pks.push_back(pks[row]);
          chunk_vectors.insert(chunk_vectors.end(), vectors.begin() + row * dim,
                               vectors.begin() + (row + 1) * dim);
        }
        auto msgs =
            kingfisher::InsertMessages(collection_, chunk_pks, chunk_vectors, args_.partition);
        if (!msgs.ok()) return Fail(msgs.status());
        // One shard's rows make one message.
        if (!Send(shard, std::move(msgs->front()), std::move(chunk_pks))) return;
      }
      if (!any) return;
    }
  }

  // Appends `m` (autocommit, or in its shard's transaction, begun on first use) once fewer
  // than kMaxInFlight are in flight. False once an error stopped the insert.
  bool Send(uint32_t shard, kingfisher::Message m, std::vector<int64_t> pks) {
    {
      absl::MutexLock l(&mu_);
      auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return in_flight_ < kMaxInFlight || !first_error_.ok();
      };
      mu_.Await(absl::Condition(&room));
      if (!first_error_.ok()) return false;
      ++in_flight_;
    }
    auto done = [this, shard, pks = std::move(pks)](absl::StatusOr<AppendResult> r) mutable {
      OnResult(shard, std::move(pks), std::move(r));
    };
    if (!args_.txn) {
      producer_->AppendAsync(std::move(m), std::move(done));
      return true;
    }
    if (txns_[shard] == nullptr) {
      auto txn = producer_->BeginTxn(collection_.vchannels[shard]);
      if (!txn.ok()) {
        done(txn.status());
        return false;
      }
      txns_[shard] = *std::move(txn);
    }
    txns_[shard]->AppendAsync(std::move(m), std::move(done));
    return true;
  }

  void OnResult(uint32_t shard, std::vector<int64_t> pks, absl::StatusOr<AppendResult> r) {
    absl::MutexLock l(&mu_);
    if (r.ok()) {
      rows_acked_ += pks.size();
      if (args_.txn) {
        txn_acks_[shard].push_back({*r, std::move(pks)});
      } else {
        PrintLine(out_, RenderRowsAck(*r, collection_.vchannels[shard], pks));
      }
      const absl::Time now = absl::Now();
      if (now - last_progress_ >= args_.progress_interval) {
        last_progress_ = now;
        PrintProgress(now);
      }
    } else if (first_error_.ok()) {
      first_error_ = r.status();
    }
    --in_flight_;
  }

  // `kfctl: insert: 12000/100000 rows acknowledged (12%, 9500 rows/s)`: on a terminal one line
  // rewritten in place (ended by Run), else a line each time (a log keeps every one).
  void PrintProgress(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const double seconds = absl::ToDoubleSeconds(now - started_);
    std::fprintf(err_,
                 "%skfctl: insert: %" PRIu64 "/%" PRIu64 " rows acknowledged (%" PRIu64
                 "%%, %.0f rows/s)%s%s",
                 tty_ ? "\r" : "", rows_acked_, total_,
                 total_ == 0 ? 100 : rows_acked_ * 100 / total_,
                 seconds > 0 ? static_cast<double>(rows_acked_) / seconds : 0.0,
                 args_.txn ? " (not committed yet)" : "", tty_ ? "\033[K" : "\n");
    std::fflush(err_);
    progress_shown_ = true;
  }

  // Commits the shards' transactions in shard order, printing each one's lines once it
  // committed; the first failure rolls back the rest.
  absl::Status CommitAll() {
    for (size_t shard = 0; shard < txns_.size(); ++shard) {
      if (txns_[shard] == nullptr) continue;
      auto commit = txns_[shard]->Commit();
      if (!commit.ok()) {
        RollbackFrom(shard + 1);
        return WithContext(
            commit.status(),
            absl::StrCat("commit of shard ", shard, " (", collection_.vchannels[shard],
                         ") failed; the shards before it are committed (their lines are "
                         "printed), those after it were rolled back"));
      }
      std::vector<std::pair<AppendResult, std::vector<int64_t>>> acks;
      {
        absl::MutexLock l(&mu_);
        acks = std::move(txn_acks_[shard]);
      }
      std::sort(acks.begin(), acks.end(),
                [](const auto& a, const auto& b) { return a.first.timetick < b.first.timetick; });
      for (const auto& [ack, pks] : acks) {
        PrintLine(out_, RenderRowsAck(ack, collection_.vchannels[shard], pks));
      }
    }
    return absl::OkStatus();
  }

  // Best effort: the error that stopped the insert is what the user needs.
  void RollbackFrom(size_t first_shard) {
    for (size_t shard = first_shard; shard < txns_.size(); ++shard) {
      if (txns_[shard] != nullptr) (void)txns_[shard]->Rollback();
    }
  }

  const InsertArgs& args_;
  const CollectionInfo& collection_;
  kingfisher::Client* const client_;
  kingfisher::Producer* const producer_;
  std::FILE* const out_;
  std::FILE* const err_;
  const bool tty_ = isatty(fileno(err_)) == 1;
  uint64_t total_ = 0;
  // --txn: by shard; only the thread running Run touches them.
  std::vector<std::unique_ptr<kingfisher::Transaction>> txns_;

  absl::Mutex mu_;
  uint64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
  uint64_t rows_acked_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time started_ ABSL_GUARDED_BY(mu_);
  absl::Time last_progress_ ABSL_GUARDED_BY(mu_);
  bool progress_shown_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::vector<std::pair<AppendResult, std::vector<int64_t>>>> txn_acks_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace

int RunInsert(const Args& args, std::FILE* out, std::FILE* err) {
  const InsertArgs& a = args.insert;
  Vectors file;
  if (!a.file.empty()) {
    auto read = ReadVectorFile(a.file);
    if (!read.ok()) {
      PrintError(err, read.status());
      return kExitUsage;
    }
    file = *std::move(read);
  }
  auto client = ConnectFor(args);
  if (!client.ok()) {
    PrintError(err, client.status());
    return kExitUsage;
  }
  auto collection = (*client)->DescribeCollection(a.collection);
  if (!collection.ok()) {
    PrintError(err, collection.status());
    return kExitServerError;
  }
  if (!a.file.empty() && file.dim != collection->dim) {
    PrintError(err, StreamingError(StreamingCode::kInvalidArgument,
                                   absl::StrCat(a.file, " has vectors of dim ", file.dim,
                                                ", collection '", a.collection, "' has dim ",
                                                collection->dim, "; nothing was sent")));
    return kExitUsage;
  }
  if (collection->vchannels.empty() || collection->dim == 0) {
    PrintError(err, absl::InternalError(absl::StrCat("collection '", a.collection,
                                                     "' was described without vchannels or dim")));
    return kExitServerError;
  }
  const uint32_t dim = collection->dim;
  RowSource source;
  uint64_t total = 0;
  if (!a.file.empty()) {
    total = file.rows;
    source = [&file, dim](uint64_t first, uint64_t n, std::vector<float>* v) {
      v->assign(file.values.begin() + first * dim, file.values.begin() + (first + n) * dim);
    };
  } else {
    total = *a.rows;
    auto rng = std::make_shared<std::mt19937_64>(std::random_device{}());
    source = [rng, dim](uint64_t, uint64_t n, std::vector<float>* v) {
      std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
      v->resize(n * dim);
      for (float& x : *v) x = unit(*rng);
    };
  }
  auto producer = (*client)->CreateProducer();
  if (!producer.ok()) {
    PrintError(err, producer.status());
    return kExitServerError;
  }
  absl::Status s;
  {
    // Destroyed (with its transactions) before the producer closes.
    Inserter inserter(a, *collection, client->get(), producer->get(), out, err);
    s = inserter.Run(total, source);
  }
  (*producer)->Close();
  if (!s.ok()) {
    PrintError(err, s);
    return kExitServerError;
  }
  return kExitOk;
}

int RunDelete(const Args& args, std::FILE* out, std::FILE* err) {
  const DeleteArgs& d = args.del;
  auto client = ConnectFor(args);
  if (!client.ok()) {
    PrintError(err, client.status());
    return kExitUsage;
  }
  auto collection = (*client)->DescribeCollection(d.collection);
  if (!collection.ok()) {
    PrintError(err, collection.status());
    return kExitServerError;
  }
  auto msgs = kingfisher::DeleteMessages(*collection, d.pks);
  if (!msgs.ok()) {
    PrintError(err, msgs.status());
    return kExitServerError;
  }
  auto producer = (*client)->CreateProducer();
  if (!producer.ok()) {
    PrintError(err, producer.status());
    return kExitServerError;
  }
  // A few messages (one per shard): appended one after another.
  absl::Status s;
  for (kingfisher::Message& m : *msgs) {
    const std::string vchannel = m.vchannel;
    auto pks = DecodeDeletePks(m.payload);
    auto r = (*producer)->AppendSync(std::move(m));
    if (!r.ok()) {
      s = r.status();
      break;
    }
    std::vector<int64_t> list(pks->pks().begin(), pks->pks().end());
    PrintLine(out, RenderRowsAck(*r, vchannel, list));
  }
  (*producer)->Close();
  if (!s.ok()) {
    PrintError(err, s);
    return kExitServerError;
  }
  return kExitOk;
}

}  // namespace kf::cli
