// Shared by the objectstore backend tests: a local object store (behind a FaultObjectStore) and
// an embedded metadata store in a temp dir, openers over them, and read helpers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "storage/fs/file_system.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/object/fault_object_store.h"
#include "storage/object/local_object_store.h"
#include "wal/backends/objectstore/object_opener.h"
#include "wal/testing/backend_test_util.h"

namespace kf::wal::objectstore::testing {

using wal::testing::AppendSync;
using wal::testing::Writer;

class Stores {
 public:
  Stores() {
    auto store = object::LocalObjectStore::Open(fs::DefaultFileSystem(), dir_.path() + "/objects");
    EXPECT_TRUE(store.ok()) << store.status();
    base_ = *std::move(store);
    fault_ = std::make_unique<object::FaultObjectStore>(base_.get());
    auto meta = meta::EmbeddedMetaStore::Open(dir_.path() + "/meta", {});
    EXPECT_TRUE(meta.ok()) << meta.status();
    meta_ = *std::move(meta);
  }

  object::ObjectStore* base() { return base_.get(); }
  object::FaultObjectStore* fault() { return fault_.get(); }
  meta::MetaStore* meta() { return meta_.get(); }

  // Options over the fault store (or `store`), with short timeouts for tests.
  ObjectOpenerOptions Options(object::ObjectStore* store = nullptr) {
    ObjectOpenerOptions o;
    o.store = store != nullptr ? store : fault_.get();
    o.meta = meta_.get();
    o.request_timeout = absl::Seconds(1);
    o.upload_timeout = absl::Seconds(10);
    return o;
  }

 private:
  kf::testing::TempDir dir_{"objwal"};
  std::unique_ptr<object::LocalObjectStore> base_;
  std::unique_ptr<object::FaultObjectStore> fault_;
  std::unique_ptr<meta::EmbeddedMetaStore> meta_;
};

inline absl::StatusOr<std::vector<Entry>> ReadAll(WalBackend* b,
                                                  absl::Duration quiet = absl::Milliseconds(300)) {
  return wal::testing::ReadUntilQuiet(b, quiet);
}

}  // namespace kf::wal::objectstore::testing
