// Helpers of the quorum backend tests: in-process logstores on loopback gRPC (stoppable and
// restartable on the same address), an embedded metadata store, a local object store, and
// synchronous append / read helpers.
#pragma once

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "logstore/logstore_server.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/meta/testing/test_dir.h"
#include "storage/object/local_object_store.h"
#include "wal/backends/quorum/quorum_opener.h"

namespace kf::wal::quorum::testing {

class QuorumEnv {
 public:
  explicit QuorumEnv(int logstores, const std::string& tag = "quorum") {
    root_ = meta::testing::FreshTestDir(tag).string();
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
  std::string root_;
  std::unique_ptr<meta::EmbeddedMetaStore> meta_;
  std::unique_ptr<object::LocalObjectStore> objects_;
  std::vector<std::unique_ptr<logstore::LogStoreServer>> servers_;
  std::vector<std::string> addresses_;
};

inline OpenOptions Writer(const std::string& pchannel, int64_t term) {
  OpenOptions o;
  o.pchannel = pchannel;
  o.term = Term(term);
  return o;
}

// Appends and waits for the callback: the id, or the callback's (or Append's) error.
inline absl::StatusOr<MessageId> AppendSync(WalBackend* b, std::string data) {
  std::promise<absl::Status> done;
  auto fut = done.get_future();
  auto id = b->Append(std::move(data), [&done](absl::Status s) { done.set_value(s); });
  if (!id.ok()) return id.status();
  absl::Status s = fut.get();
  if (!s.ok()) return s;
  return id;
}

// Reads from `options` until `count` entries were read (an error if one does not come within
// `wait`).
inline absl::StatusOr<std::vector<Entry>> ReadN(WalBackend* b, const ReadOptions& options,
                                                size_t count,
                                                absl::Duration wait = absl::Seconds(10)) {
  auto scanner = b->Read(options);
  if (!scanner.ok()) return scanner.status();
  std::vector<Entry> out;
  while (out.size() < count) {
    auto e = (*scanner)->Next(absl::Now() + wait);
    if (!e.ok()) return e.status();
    out.push_back(std::move(*e));
  }
  return out;
}

// Every entry from the earliest until none arrives within `quiet`.
inline absl::StatusOr<std::vector<Entry>> ReadAll(WalBackend* b,
                                                  absl::Duration quiet = absl::Milliseconds(300)) {
  auto scanner = b->Read(ReadOptions{});
  if (!scanner.ok()) return scanner.status();
  std::vector<Entry> out;
  for (;;) {
    auto e = (*scanner)->Next(absl::Now() + quiet);
    if (absl::IsDeadlineExceeded(e.status())) return out;
    if (!e.ok()) return e.status();
    out.push_back(std::move(*e));
  }
}

}  // namespace kf::wal::quorum::testing
