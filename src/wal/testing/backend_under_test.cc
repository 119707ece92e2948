#include "wal/testing/backend_under_test.h"

#include "storage/fs/file_system.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/object/local_object_store.h"
#include "wal/backends/local/local_opener.h"
#include "wal/backends/objectstore/object_opener.h"

namespace kf::wal::testing {

std::string BackendName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kMemory:
      return "memory";
    case BackendKind::kLocal:
      return "local";
    case BackendKind::kObjectStore:
      return "objectstore";
  }
  return "?";
}

BackendUnderTest::BackendUnderTest(BackendKind kind, const std::filesystem::path& dir,
                                   std::string pchannel, uint64_t segment_bytes)
    : pchannel_(std::move(pchannel)) {
  switch (kind) {
    case BackendKind::kMemory:
      memory_ = std::make_unique<MemoryWalBackend>(pchannel_);
      break;
    case BackendKind::kLocal: {
      local::LocalOpenerOptions o;
      o.root = (dir / "wal").string();
      if (segment_bytes > 0) o.segment_bytes = segment_bytes;
      opener_ = local::NewLocalOpener(o);
      break;
    }
    case BackendKind::kObjectStore: {
      objects_ =
          *object::LocalObjectStore::Open(fs::DefaultFileSystem(), (dir / "objects").string());
      meta_ = *meta::EmbeddedMetaStore::Open((dir / "meta").string(), {});
      objectstore::ObjectOpenerOptions o;
      o.store = objects_.get();
      o.meta = meta_.get();
      if (segment_bytes > 0) o.segment_bytes = segment_bytes;
      opener_ = objectstore::NewObjectOpener(o);
      break;
    }
  }
}

BackendUnderTest::~BackendUnderTest() = default;

absl::StatusOr<std::unique_ptr<WalBackend>> BackendUnderTest::Open(Term term) {
  if (memory_ != nullptr) return std::unique_ptr<WalBackend>(memory_->Reopen(term));
  return opener_->Open({.pchannel = pchannel_, .term = term});
}

}  // namespace kf::wal::testing
