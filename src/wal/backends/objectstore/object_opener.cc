#include "wal/backends/objectstore/object_opener.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "format/log_name.h"
#include "wal/backends/objectstore/object_backend.h"
#include "wal/backends/objectstore/writer_open.h"

namespace kf::wal::objectstore {
namespace {

class ObjectOpener final : public WalOpener {
 public:
  explicit ObjectOpener(ObjectOpenerOptions options) : options_(std::move(options)) {}

  absl::StatusOr<std::unique_ptr<WalBackend>> Open(const OpenOptions& options) override {
    RETURN_IF_ERROR(format::ValidateLogName(options.pchannel));
    if (options_.store == nullptr || options_.meta == nullptr ||
        options_.max_parallel_uploads < 1 || options_.max_block_bytes == 0) {
      return absl::InvalidArgumentError("objectstore WAL: opener needs both stores, >= 1 upload");
    }
    Layout layout(options_.root, options_.meta_prefix, options.pchannel);
    const absl::Time deadline = absl::Now() + options_.open_timeout;
    auto view = std::make_shared<LogView>(options_.store, options_.meta, layout, options.read_only,
                                          options_.cache_bytes, options_.poll_interval,
                                          options_.request_timeout);
    if (options.read_only) {
      ASSIGN_OR_RETURN(VersionedMeta meta, LoadMeta(options_.meta, layout.meta_key(), deadline));
      if (meta.mod_revision == 0) {
        return absl::NotFoundError(
            absl::StrCat("objectstore WAL: pchannel ", options.pchannel, " was never written"));
      }
      RETURN_IF_ERROR(view->Refresh(deadline));
      return std::unique_ptr<WalBackend>(
          std::make_unique<ObjectBackend>(options_, options.term, std::move(view)));
    }
    ASSIGN_OR_RETURN(RecoveredLog log,
                     OpenForWrite(options_.store, options_.meta, layout, options.term,
                                  options_.request_timeout, deadline));
    {
      absl::MutexLock l(&view->mu);
      view->segments = std::move(log.segments);
      view->TakeTruncation(log.meta.meta);
    }
    return std::unique_ptr<WalBackend>(std::make_unique<ObjectBackend>(
        options_, options.term, std::move(view), std::move(log.meta), options.flush_duration));
  }

  WalKind kind() const override { return WalKind::kObjectStore; }

 private:
  const ObjectOpenerOptions options_;
};

}  // namespace

std::unique_ptr<WalOpener> NewObjectOpener(ObjectOpenerOptions options) {
  return std::make_unique<ObjectOpener>(std::move(options));
}

}  // namespace kf::wal::objectstore
