// HttpServer: the operations HTTP port (SPEC §8): /healthz answers 200 "ok" while the process
// serves. /metrics comes with the metrics work.
//
// Thread-safety: Start/Stop from one thread; requests are served on cpp-httplib's threads.
// Ownership: owns its listener thread; Stop (or the destructor) joins it. Errors: Start fails
// with UNAVAILABLE when the address cannot be bound.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace kf::server {

class HttpServer {
 public:
  // `listen` is HOST:PORT; port 0 binds any free port.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const std::string& listen);
  ~HttpServer();

  const std::string& address() const { return address_; }
  void Stop();

 private:
  HttpServer();

  std::unique_ptr<httplib::Server> server_;
  std::string address_;
  std::thread thread_;
};

}  // namespace kf::server
