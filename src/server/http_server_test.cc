// The operations HTTP port: /healthz follows the health state, /metrics renders the registry
// it was given with the Prometheus content type.
#include "server/http_server.h"

#include <httplib.h>

#include "common/metrics/registry.h"
#include "gtest/gtest.h"

namespace kf::server {
namespace {

TEST(HttpServerTest, HealthzIs503UntilServingAndWhileStopping) {
  metrics::Registry registry;
  auto http = HttpServer::Start("127.0.0.1:0", &registry);
  ASSERT_TRUE(http.ok()) << http.status();
  const int port = std::stoi((*http)->address().substr((*http)->address().rfind(':') + 1));
  httplib::Client client("127.0.0.1", port);

  httplib::Result r = client.Get("/healthz");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "starting: starting");

  (*http)->SetHealth(Health::kStarting, "recovering WALs");
  r = client.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "starting: recovering WALs");

  (*http)->SetHealth(Health::kServing, "");
  r = client.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok");

  (*http)->SetHealth(Health::kStopping, "shutting down");
  r = client.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "stopping: shutting down");
  (*http)->Stop();
}

TEST(HttpServerTest, MetricsRendersTheRegistry) {
  metrics::Registry registry;
  registry.GetCounter("kf_test_total", "A test counter.").With({})->Inc(5);
  auto http = HttpServer::Start("127.0.0.1:0", &registry);
  ASSERT_TRUE(http.ok()) << http.status();
  const int port = std::stoi((*http)->address().substr((*http)->address().rfind(':') + 1));
  httplib::Client client("127.0.0.1", port);
  httplib::Result r = client.Get("/metrics");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r->body, registry.Render());
  EXPECT_NE(r->body.find("kf_test_total 5\n"), std::string::npos) << r->body;
}

}  // namespace
}  // namespace kf::server
