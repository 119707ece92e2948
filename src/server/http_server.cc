#include "server/http_server.h"

#include <httplib.h>

#include "absl/strings/str_cat.h"
#include "rpc/rpc_server.h"

namespace kf::server {

HttpServer::HttpServer() : server_(std::make_unique<httplib::Server>()) {}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen) {
  std::string host;
  int port = 0;
  if (absl::Status s = rpc::SplitHostPort(listen, &host, &port); !s.ok()) return s;
  std::unique_ptr<HttpServer> http(new HttpServer());
  http->server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain");
  });
  int bound = port;
  if (port == 0) {
    bound = http->server_->bind_to_any_port(host);
  } else if (!http->server_->bind_to_port(host, port)) {
    bound = -1;
  }
  if (bound <= 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", listen));
  http->address_ = absl::StrCat(host, ":", bound);
  httplib::Server* srv = http->server_.get();
  http->thread_ = std::thread([srv] { srv->listen_after_bind(); });
  return http;
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  if (thread_.joinable()) {
    server_->stop();
    thread_.join();
  }
}

}  // namespace kf::server
