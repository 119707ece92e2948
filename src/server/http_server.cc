#include "server/http_server.h"

#include <httplib.h>

#include "absl/strings/str_cat.h"
#include "common/listen_error.h"
#include "common/metrics/exposition.h"
#include "common/metrics/registry.h"
#include "rpc/rpc_server.h"

namespace kf::server {

HttpServer::HttpServer(const metrics::Registry* metrics)
    : metrics_(metrics != nullptr ? metrics : &metrics::DefaultRegistry()),
      server_(std::make_unique<httplib::Server>()) {}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen,
                                                              const metrics::Registry* metrics) {
  std::string host;
  int port = 0;
  if (absl::Status s = rpc::SplitHostPort(listen, &host, &port); !s.ok()) return s;
  std::unique_ptr<HttpServer> http(new HttpServer(metrics));
  HttpServer* self = http.get();
  http->server_->Get("/healthz", [self](const httplib::Request&, httplib::Response& res) {
    std::string body;
    self->Healthz(&res.status, &body);
    res.set_content(body, "text/plain");
  });
  http->server_->Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    res.set_content(self->metrics_->Render(), std::string(metrics::kTextContentType));
  });
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which lets a second server share the
  // port (common/listen_error.h).
  http->server_->set_socket_options([](int sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  int bound = port;
  if (port == 0) {
    bound = http->server_->bind_to_any_port(host);
  } else if (!http->server_->bind_to_port(host, port)) {
    bound = -1;
  }
  if (bound <= 0) return ListenError("http", host, port);
  http->address_ = absl::StrCat(host, ":", bound);
  httplib::Server* srv = http->server_.get();
  http->thread_ = std::thread([srv] { srv->listen_after_bind(); });
  return http;
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::SetHealth(Health health, std::string reason) {
  absl::MutexLock lock(&mu_);
  health_ = health;
  reason_ = std::move(reason);
}

void HttpServer::Healthz(int* status, std::string* body) const {
  absl::MutexLock lock(&mu_);
  switch (health_) {
    case Health::kServing:
      *status = 200;
      *body = "ok";
      return;
    case Health::kStarting:
      *status = 503;
      *body = "starting: " + reason_;
      return;
    case Health::kStopping:
      *status = 503;
      *body = "stopping: " + reason_;
      return;
  }
}

void HttpServer::Stop() {
  if (thread_.joinable()) {
    server_->stop();
    thread_.join();
  }
}

}  // namespace kf::server
