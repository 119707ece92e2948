// LogStoreServer: one logstore node in a process — the SegmentStore on its data dir, the
// LogStore gRPC service on `listen`, and the background uploader that copies every sealed
// segment it holds completely to object storage (docs/quorum-wal.md). `kingfisher run logstore`
// wraps it (src/server/logstore.cc); tests run several in one process.
//
// Thread-safety: thread-safe. Ownership: owns the store, server and uploader thread; borrows
// the file system and object store, which must outlive it. Errors: Start fails with the store's
// recovery error or UNAVAILABLE when `listen` cannot be bound.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/security/server_credentials.h"
#include "logstore/store/segment_store.h"
#include "storage/object/object_store.h"

namespace grpc {
class Server;
}

namespace kf::logstore {

class LogStoreService;

struct LogStoreServerOptions {
  std::string listen = "127.0.0.1:0";  // port 0: any free port
  std::string data_dir;
  fs::FileSystem* fs = nullptr;                 // null = POSIX
  object::ObjectStore* object_store = nullptr;  // null = no upload
  std::string object_prefix = "kf/wal/quorum";  // objects: SegmentObjectKey(prefix, ...)
  absl::Duration upload_interval = absl::Seconds(1);
  size_t max_message_bytes = 96u << 20;
  // What the listener presents (wire/credentials.h); null: plaintext.
  std::shared_ptr<grpc::ServerCredentials> credentials;
};

class LogStoreServer {
 public:
  static absl::StatusOr<std::unique_ptr<LogStoreServer>> Start(LogStoreServerOptions options);
  ~LogStoreServer();

  // HOST:PORT bound.
  const std::string& address() const { return address_; }
  SegmentStore* store() { return store_.get(); }

  // Uploads every sealed, complete, not yet uploaded segment now; the first error.
  absl::Status UploadPending();
  // Stops serving (in-flight calls get `grace`) and the uploader. Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(1));

 private:
  LogStoreServer() = default;
  absl::Status UploadOne(const SegmentKey& key, uint64_t end);
  void UploadLoop(std::stop_token stop);

  LogStoreServerOptions options_;
  std::string address_;
  std::unique_ptr<SegmentStore> store_;
  std::unique_ptr<LogStoreService> service_;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex upload_mu_;  // one upload pass at a time
  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
  std::jthread uploader_;
};

}  // namespace kf::logstore
