// Helpers of the quorum backend tests: in-process logstores on loopback gRPC (stoppable and
// restartable on the same address), an embedded metadata store, a local object store, and
// synchronous append / read helpers.
#pragma once

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "logstore/service/logstore_server.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/object/local_object_store.h"
#include "wal/backends/quorum/quorum_opener.h"
#include "wal/testing/backend_test_util.h"

namespace kf::wal::quorum::testing {

class QuorumEnv {
 public:
  explicit QuorumEnv(int logstores, const std::string& tag = "quorum") : dir_(tag) {
    auto meta = meta::EmbeddedMetaStore::Open(root_ + "/meta", {});
    EXPECT_TRUE(meta.ok()) << meta.status();
    meta_ = *std::move(meta);
    auto objects = object::LocalObjectStore::Open(fs::DefaultFileSystem(), root_ + "/objects");
    EXPECT_TRUE(objects.ok()) << objects.status();
    objects_ = *std::move(objects);
    for (int i = 0; i < logstores; ++i) {
      servers_.emplace_back();
      addresses_.push_back("127.0.0.1:0");
      EXPECT_TRUE(StartLogStore(i));
    }
  }
  ~QuorumEnv() {
    for (auto& s : servers_) s.reset();
  }

  bool StartLogStore(int i) {
    logstore::LogStoreServerOptions o;
    o.listen = addresses_[i];
    o.data_dir = root_ + "/logstore" + std::to_string(i);
    o.object_store = objects_.get();
    o.object_prefix = "wal";
    o.upload_interval = absl::Hours(1);  // tests upload explicitly
    auto s = logstore::LogStoreServer::Start(o);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return false;
    servers_[i] = *std::move(s);
    addresses_[i] = servers_[i]->address();
    return true;
  }
  void StopLogStore(int i) { servers_[i].reset(); }
  logstore::LogStoreServer* server(int i) { return servers_[i].get(); }
  const std::vector<std::string>& addresses() const { return addresses_; }
  int IndexOf(const std::string& address) const {
    for (size_t i = 0; i < addresses_.size(); ++i) {
      if (addresses_[i] == address) return static_cast<int>(i);
    }
    return -1;
  }

  QuorumOpenerOptions Options() {
    QuorumOpenerOptions o;
    o.meta = meta_.get();
    o.logstores = addresses_;
    o.object_store = objects_.get();
    o.object_prefix = "wal";
    o.rpc_timeout = absl::Seconds(2);
    o.ack_timeout = absl::Seconds(3);
    return o;
  }
  meta::MetaStore* meta() { return meta_.get(); }
  object::ObjectStore* objects() { return objects_.get(); }

 private:
  kf::testing::TempDir dir_;
  const std::string root_ = dir_.path();
  std::unique_ptr<meta::EmbeddedMetaStore> meta_;
  std::unique_ptr<object::LocalObjectStore> objects_;
  std::vector<std::unique_ptr<logstore::LogStoreServer>> servers_;
  std::vector<std::string> addresses_;
};

using wal::testing::AppendSync;
using wal::testing::ReadN;
using wal::testing::Writer;
inline absl::StatusOr<std::vector<Entry>> ReadAll(WalBackend* b) {
  return wal::testing::ReadUntilQuiet(b);
}

}  // namespace kf::wal::quorum::testing
