#include "wal/backends/quorum/quorum_opener.h"

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/log_name.h"
#include "wal/backends/quorum/ensemble.h"
#include "wal/backends/quorum/log_view.h"
#include "wal/backends/quorum/logstore_client.h"
#include "wal/backends/quorum/quorum_backend.h"
#include "wal/backends/quorum/quorum_meta.h"
#include "wal/backends/quorum/recovery.h"

namespace kf::wal::quorum {
namespace {

class QuorumOpener final : public WalOpener {
 public:
  explicit QuorumOpener(QuorumOpenerOptions options)
      : options_(std::move(options)), pool_(options_.credentials) {}

  WalKind kind() const override { return WalKind::kQuorum; }

  absl::StatusOr<std::unique_ptr<WalBackend>> Open(const OpenOptions& open) override {
    if (options_.meta == nullptr) {
      return absl::FailedPreconditionError("quorum WAL: no metadata store configured");
    }
    RETURN_IF_ERROR(format::ValidateLogName(open.pchannel));
    auto meta = std::make_unique<QuorumMeta>(options_.meta, options_.meta_prefix, open.pchannel);
    auto view = std::make_shared<LogView>();
    if (open.read_only) {
      RETURN_IF_ERROR(RefreshView(meta.get(), &pool_, options_.rpc_timeout, view.get()));
      {
        absl::MutexLock l(&view->mu);
        if (view->segments.empty()) {
          return absl::NotFoundError(
              absl::StrCat("quorum WAL: ", open.pchannel, " was never written"));
        }
      }
      return std::unique_ptr<WalBackend>(std::make_unique<QuorumBackend>(
          options_, &pool_, open.pchannel, open.term, std::move(meta), std::move(view)));
    }
    view->live = true;
    const absl::Time deadline = absl::Now() + options_.rpc_timeout;
    ASSIGN_OR_RETURN(uint64_t epoch, meta->Claim(open.term, deadline));
    ASSIGN_OR_RETURN(auto segments, meta->List(deadline));
    std::map<uint64_t, SegmentRecord> put;
    uint64_t next = 0;
    if (!segments.empty()) {
      auto& [last_id, last] = *segments.rbegin();
      next = last_id + 1;
      if (!last.meta.sealed()) {
        ASSIGN_OR_RETURN(SegmentRecord sealed, RecoverSegment(&pool_, open.pchannel, last_id, last,
                                                              epoch, options_.rpc_timeout));
        put.emplace(last_id, sealed);
        last = std::move(sealed);
      }
    }
    // The first segment this writer appends to; its ensemble from the live logstores.
    ASSIGN_OR_RETURN(auto ensemble, ChooseEnsemble(options_, &pool_, next));
    SegmentRecord created;
    for (auto& a : ensemble) created.meta.add_ensemble(std::move(a));
    created.meta.set_epoch(epoch);
    put.emplace(next, created);
    ASSIGN_OR_RETURN(int64_t rev, meta->Update(put, {}, absl::Now() + options_.rpc_timeout));
    created.mod_revision = rev;
    {
      absl::MutexLock l(&view->mu);
      for (const auto& [id, rec] : segments) {
        ViewSegment v;
        v.ensemble.assign(rec.meta.ensemble().begin(), rec.meta.ensemble().end());
        v.sealed = true;
        v.end = rec.meta.end();
        v.bytes = rec.meta.bytes();
        view->segments.emplace(id, std::move(v));
      }
    }
    if (put.size() > 1) SealReplicas(open.pchannel, put.begin()->first, put.begin()->second, epoch);
    QuorumBackend::WriterInit init{epoch, next, std::move(created), open.flush_duration};
    return std::unique_ptr<WalBackend>(
        std::make_unique<QuorumBackend>(options_, &pool_, open.pchannel, open.term, std::move(meta),
                                        std::move(view), std::move(init)));
  }

 private:
  // Tells the recovered segment's replicas its end (they upload it then). Best effort.
  void SealReplicas(const std::string& log, uint64_t segment, const SegmentRecord& rec,
                    uint64_t epoch) {
    for (const auto& address : rec.meta.ensemble()) {
      kingfisher::v1::SealRequest req;
      req.set_log(log);
      req.set_segment(segment);
      req.set_epoch(epoch);
      req.set_end(rec.meta.end());
      (void)pool_.Get(address)->Seal(req, absl::Now() + options_.rpc_timeout);
    }
  }

  const QuorumOpenerOptions options_;
  LogStorePool pool_;
};

}  // namespace

std::unique_ptr<WalOpener> NewQuorumOpener(QuorumOpenerOptions options) {
  return std::make_unique<QuorumOpener>(std::move(options));
}

}  // namespace kf::wal::quorum
