#include "wal/backends/testing/backend_under_test.h"

#include <fstream>

#include "gtest/gtest.h"
#include "logstore/service/logstore_server.h"
#include "storage/fs/file_system.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/object/local_object_store.h"
#include "wal/backends/local/local_opener.h"
#include "wal/backends/objectstore/object_opener.h"
#include "wal/backends/quorum/quorum_opener.h"

namespace kf::wal::testing {
namespace {

// Three logstores under `dir`, on the ports recorded there (chosen by the first instance).
std::vector<std::string> StartLogStores(
    const std::filesystem::path& dir, std::vector<std::unique_ptr<logstore::LogStoreServer>>* out) {
  const std::filesystem::path ports_file = dir / "logstore-ports";
  std::vector<std::string> addresses;
  if (std::ifstream in(ports_file); in) {
    for (std::string a; in >> a;) addresses.push_back(a);
  }
  const bool fresh = addresses.size() != 3;
  if (fresh) addresses.assign(3, "127.0.0.1:0");
  for (size_t i = 0; i < addresses.size(); ++i) {
    logstore::LogStoreServerOptions o;
    o.listen = addresses[i];
    o.data_dir = (dir / ("logstore" + std::to_string(i))).string();
    auto server = logstore::LogStoreServer::Start(o);
    if (!server.ok()) {
      ADD_FAILURE() << "logstore " << i << " on " << addresses[i] << ": " << server.status();
      continue;
    }
    addresses[i] = (*server)->address();
    out->push_back(*std::move(server));
  }
  if (fresh) {
    std::ofstream f(ports_file);
    for (const auto& a : addresses) f << a << "\n";
  }
  return addresses;
}

}  // namespace

std::string BackendName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kMemory:
      return "memory";
    case BackendKind::kLocal:
      return "local";
    case BackendKind::kObjectStore:
      return "objectstore";
    case BackendKind::kQuorum:
      return "quorum";
  }
  return "?";
}

std::optional<BackendKind> BackendKindFromName(std::string_view name) {
  for (BackendKind k : {BackendKind::kMemory, BackendKind::kLocal, BackendKind::kObjectStore,
                        BackendKind::kQuorum}) {
    if (BackendName(k) == name) return k;
  }
  return std::nullopt;
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
    case BackendKind::kQuorum: {
      meta_ = *meta::EmbeddedMetaStore::Open((dir / "meta").string(), {});
      quorum::QuorumOpenerOptions o;
      o.meta = meta_.get();
      o.logstores = StartLogStores(dir, &logstores_);
      if (segment_bytes > 0) o.segment_bytes = segment_bytes;
      opener_ = quorum::NewQuorumOpener(o);
      break;
    }
  }
}

BackendUnderTest::~BackendUnderTest() {
  opener_.reset();  // before the logstores it connects to
  logstores_.clear();
}

absl::StatusOr<std::unique_ptr<WalBackend>> BackendUnderTest::Open(Term term) {
  if (memory_ != nullptr) return std::unique_ptr<WalBackend>(memory_->Reopen(term));
  return opener_->Open({.pchannel = pchannel_, .term = term});
}

}  // namespace kf::wal::testing
