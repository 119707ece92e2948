// BackendUnderTest: one pchannel log on a chosen backend that survives reopening at a higher
// term, for the WAL suites parameterised by backend (the memory fake, the local disk backend,
// the objectstore backend over a local object store and an embedded metadata store, the quorum
// backend over 3 in-process logstores on loopback and an embedded metadata store). The
// logstores' ports are kept in `dir`, so another instance over the same dir (a restarted
// process) serves them on the same addresses the segment metadata names.
//
// Thread-safety: Open may be called from one thread at a time. Ownership: owns the stores;
// backends it opened must be closed before it is destroyed.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/meta/meta_store.h"
#include "storage/object/object_store.h"
#include "wal/backend.h"
#include "wal/testing/memory_backend.h"

namespace kf::logstore {
class LogStoreServer;
}

namespace kf::wal::testing {

enum class BackendKind { kMemory, kLocal, kObjectStore, kQuorum };

std::string BackendName(BackendKind kind);
// The inverse of BackendName; nullopt for a name that is none of them.
std::optional<BackendKind> BackendKindFromName(std::string_view name);

class BackendUnderTest {
 public:
  // `dir` holds the log (local, objectstore); `segment_bytes` of 0 keeps the default.
  BackendUnderTest(BackendKind kind, const std::filesystem::path& dir, std::string pchannel,
                   uint64_t segment_bytes = 0);
  ~BackendUnderTest();

  absl::StatusOr<std::unique_ptr<WalBackend>> Open(Term term);
  // The memory log (kMemory only), for tests that drive durability by hand.
  MemoryWalBackend* memory() { return memory_.get(); }

 private:
  const std::string pchannel_;
  std::unique_ptr<MemoryWalBackend> memory_;
  std::unique_ptr<object::ObjectStore> objects_;
  std::unique_ptr<meta::MetaStore> meta_;
  std::vector<std::unique_ptr<logstore::LogStoreServer>> logstores_;
  std::unique_ptr<WalOpener> opener_;
};

}  // namespace kf::wal::testing
