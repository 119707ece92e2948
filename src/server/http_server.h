// HttpServer: the operations HTTP port (docs/semantics.md §8, docs/operations.md).
//   GET /healthz  200 "ok" while the process serves; 503 "<state>: <reason>" while it is
//                 starting or shutting down (SetHealth), so a load balancer or an orchestrator
//                 sends traffic only to a server that is ready for it.
//   GET /metrics  the metrics registry in the Prometheus text format 0.0.4.
//
// Thread-safety: Start/Stop from one thread; SetHealth from any thread; requests are served on
// cpp-httplib's threads. Ownership: owns its listener thread; Stop (or the destructor) joins
// it. Borrows the metrics registry, which must outlive the server. Errors: Start fails with
// UNAVAILABLE when the address cannot be bound.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace httplib {
class Server;
}

namespace kf::metrics {
class Registry;
}

namespace kf::server {

enum class Health { kStarting, kServing, kStopping };

class HttpServer {
 public:
  // `listen` is HOST:PORT; port 0 binds any free port. `metrics` null: the process-wide
  // metrics::DefaultRegistry(). The server starts in Health::kStarting.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& listen, const metrics::Registry* metrics = nullptr);
  ~HttpServer();

  const std::string& address() const { return address_; }
  // What /healthz answers from now on; `reason` is shown after the state when not serving.
  void SetHealth(Health health, std::string reason);
  void Stop();

 private:
  explicit HttpServer(const metrics::Registry* metrics);
  void Healthz(int* status, std::string* body) const;

  const metrics::Registry* const metrics_;
  std::unique_ptr<httplib::Server> server_;
  std::string address_;
  std::thread thread_;

  mutable absl::Mutex mu_;
  Health health_ ABSL_GUARDED_BY(mu_) = Health::kStarting;
  std::string reason_ ABSL_GUARDED_BY(mu_) = "starting";
};

}  // namespace kf::server
