#include "wal/backends/local/local_opener.h"

#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/log_name.h"
#include "wal/backends/local/layout.h"
#include "wal/backends/local/local_backend.h"
#include "wal/backends/local/writer_recovery.h"

namespace kf::wal::local {
namespace {

// Writers open through this opener, per pchannel: a newer term fences older instances in
// memory at once (the on-disk fence covers other processes); a second open of the same
// term would have two writers append to one segment, so it is refused.
class WriterRegistry {
 public:
  absl::Status Register(const std::string& pchannel, Term term,
                        const std::shared_ptr<FenceSignal>& signal) {
    absl::MutexLock l(&mu_);
    auto& list = writers_[pchannel];
    std::erase_if(list, [](const auto& e) {
      auto s = e.second.lock();
      return s == nullptr || s->closed.load();
    });
    for (const auto& [t, weak] : list) {
      if (t > term) {
        return FencedError(absl::StrCat("local WAL ", pchannel, ": term ", t.value(),
                                        " is open, cannot open term ", term.value()));
      }
    }
    for (const auto& [t, weak] : list) {
      if (t == term) {
        return absl::FailedPreconditionError(
            absl::StrCat("local WAL ", pchannel, ": already open at term ", term.value()));
      }
    }
    for (const auto& [t, weak] : list) {
      if (auto s = weak.lock()) s->fenced.store(true, std::memory_order_release);
    }
    list.emplace_back(term, signal);
    return absl::OkStatus();
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, std::vector<std::pair<Term, std::weak_ptr<FenceSignal>>>> writers_
      ABSL_GUARDED_BY(mu_);
};

class LocalOpener final : public WalOpener {
 public:
  explicit LocalOpener(LocalOpenerOptions options) : options_(std::move(options)) {
    if (options_.fs == nullptr) options_.fs = fs::DefaultFileSystem();
  }

  absl::StatusOr<std::unique_ptr<WalBackend>> Open(const OpenOptions& options) override {
    RETURN_IF_ERROR(format::ValidateLogName(options.pchannel));
    const std::string dir = fs::JoinPath(options_.root, options.pchannel);
    if (options.read_only) {
      ASSIGN_OR_RETURN(bool exists, options_.fs->FileExists(dir));
      if (!exists) {
        return absl::NotFoundError(absl::StrCat("local WAL: pchannel ", options.pchannel,
                                                " has no log under ", options_.root));
      }
      auto state = std::make_shared<LogState>(options_.fs, dir, /*read_only=*/true);
      RETURN_IF_ERROR(state->RefreshFromDisk());
      return std::unique_ptr<WalBackend>(
          std::make_unique<LocalBackend>(options_, options.pchannel, options.term, state));
    }
    auto signal = std::make_shared<FenceSignal>();
    RETURN_IF_ERROR(registry_.Register(options.pchannel, options.term, signal));
    auto recovered = RecoverForWrite(options_.fs, dir, options.term);
    if (!recovered.ok()) {
      signal->closed.store(true);
      return recovered.status();
    }
    return std::unique_ptr<WalBackend>(std::make_unique<LocalBackend>(
        options_, options.pchannel, options.term, std::move(recovered->state),
        std::move(recovered->init), std::move(signal), options.flush_duration));
  }

  WalKind kind() const override { return WalKind::kLocal; }

 private:
  LocalOpenerOptions options_;
  WriterRegistry registry_;
};

}  // namespace

std::unique_ptr<WalOpener> NewLocalOpener(LocalOpenerOptions options) {
  return std::make_unique<LocalOpener>(std::move(options));
}

}  // namespace kf::wal::local
