#include "server/config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace kf::server {
namespace {

std::string WriteTemp(const std::string& text) {
  char path[] = "/tmp/kf_config_test_XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigTest, Defaults) {
  auto c = ResolveConfig({}, {}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->listen, "127.0.0.1:19530");
  EXPECT_EQ(c->http_listen, "127.0.0.1:9091");
  EXPECT_EQ(c->data_dir, "./kingfisher-data");
  EXPECT_EQ(c->cluster, "kf");
  EXPECT_EQ(c->pchannels, 4);
  EXPECT_EQ(c->wal_backend, "local");
  EXPECT_EQ(c->max_payload_bytes, 64u << 20);
  EXPECT_EQ(c->PChannelNames(),
            (std::vector<std::string>{"kf-dml_0", "kf-dml_1", "kf-dml_2", "kf-dml_3"}));
}

TEST(ConfigTest, FlagBeatsEnvBeatsFileBeatsDefault) {
  Settings file = {{"listen", "f:1"}, {"data_dir", "/f"}, {"cluster", "fc"}, {"pchannels", "7"}};
  Settings env = {{"listen", "e:1"}, {"data_dir", "/e"}};
  Settings flags = {{"listen", "x:1"}};
  auto c = ResolveConfig(flags, env, file);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->listen, "x:1");
  EXPECT_EQ(c->data_dir, "/e");
  EXPECT_EQ(c->cluster, "fc");
  EXPECT_EQ(c->pchannels, 7);
  EXPECT_EQ(c->http_listen, "127.0.0.1:9091");
}

TEST(ConfigTest, EnvNames) {
  auto env = EnvSettings([](const char* name) -> const char* {
    if (std::string(name) == "KINGFISHER_DATA_DIR") return "/d";
    if (std::string(name) == "KINGFISHER_MAX_PAYLOAD_BYTES") return "10";
    return nullptr;
  });
  EXPECT_EQ(env, (Settings{{"data_dir", "/d"}, {"max_payload_bytes", "10"}}));
}

TEST(ConfigTest, BadValuesNameTheirSource) {
  auto c = ResolveConfig({}, {{"pchannels", "zero"}}, {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("KINGFISHER_PCHANNELS"), std::string::npos) << c.status();
  c = ResolveConfig({{"wal_backend", "quorum"}}, {}, {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("needs logstores"), std::string::npos) << c.status();
  EXPECT_TRUE(
      ResolveConfig({{"wal_backend", "quorum"}, {"logstores", "a:1,b:2,c:3"}}, {}, {}).ok());
  c = ResolveConfig({{"wal_backend", "objectstore"}}, {}, {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("needs object_store"), std::string::npos) << c.status();
  c = ResolveConfig({{"wal_backend", "objectstore"}, {"object_store", "file:///tmp/x"}}, {}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->wal_backend, "objectstore");
  EXPECT_FALSE(ResolveConfig({}, {}, {{"max_payload_bytes", "-1"}}).ok());
  EXPECT_FALSE(ResolveConfig({}, {}, {{"log_level", "loud"}}).ok());
  EXPECT_FALSE(ResolveConfig({}, {}, {{"cluster", "a b"}}).ok());
}

TEST(ConfigTest, CoordinatorSeconds) {
  auto c = ResolveConfig({}, {}, {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->balance_interval, 10);
  EXPECT_EQ(c->lease_ttl, 10);
  c = ResolveConfig({{"balance_interval", "0.5"}}, {{"lease_ttl", "2"}}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->balance_interval, 0.5);
  EXPECT_EQ(c->lease_ttl, 2);
  c = ResolveConfig({}, {{"lease_ttl", "0.5"}}, {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("KINGFISHER_LEASE_TTL"), std::string::npos) << c.status();
  EXPECT_FALSE(ResolveConfig({}, {}, {{"balance_interval", "soon"}}).ok());
  EXPECT_FALSE(ResolveConfig({}, {}, {{"balance_interval", "0"}}).ok());
  EXPECT_FALSE(ResolveConfig({}, {}, {{"lease_ttl", "nan"}}).ok());
}

TEST(ConfigTest, RecoveryStorageKnobs) {
  auto c = ResolveConfig({}, {}, {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->segment_seal_rows, 1u << 20);
  EXPECT_EQ(c->segment_seal_bytes, 512u << 20);
  EXPECT_EQ(c->segment_max_lifetime, 3600);
  EXPECT_EQ(c->segment_max_idle, 600);
  EXPECT_EQ(c->wal_retention, 7 * 24 * 3600);
  c = ResolveConfig({{"segment_max_idle", "0"}, {"wal_retention", "0"}},
                    {{"segment_seal_bytes", "1048576"}}, {{"segment_max_lifetime", "86400"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->segment_max_idle, 0);
  EXPECT_EQ(c->wal_retention, 0);
  EXPECT_EQ(c->segment_max_lifetime, 86400);
  EXPECT_EQ(c->segment_seal_bytes, 1u << 20);
  EXPECT_EQ(ResolveConfig({}, {}, {})->memory_limit, 0u);
  EXPECT_EQ(ResolveConfig({{"memory_limit", "1073741824"}}, {}, {})->memory_limit, 1u << 30);
  // Out of range or not a number: refused, naming the setting.
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"wal_retention", "-1"},
                                                        {"wal_retention", "1e12"},
                                                        {"wal_retention", "a week"},
                                                        {"segment_max_lifetime", "-5"},
                                                        {"segment_max_idle", "nan"},
                                                        {"segment_seal_bytes", "-1"},
                                                        {"segment_seal_bytes", "1048575"},
                                                        {"wal_retention_bytes", "-1"},
                                                        {"checkpoint_interval", "0"},
                                                        {"wal_segment_bytes", "1024"},
                                                        {"memory_limit", "-1"},
                                                        {"memory_limit", "lots"}}) {
    c = ResolveConfig({{key, value}}, {}, {});
    ASSERT_FALSE(c.ok()) << key << "=" << value;
    EXPECT_NE(c.status().message().find(key), std::string::npos) << c.status();
  }
}

TEST(ConfigTest, LoadsYaml) {
  std::string path = WriteTemp(
      "listen: 127.0.0.1:1\npchannels: 2\nmax_payload_bytes: 1024\netcd: [http://a:1, "
      "http://b:2]\n");
  auto s = LoadConfigFile(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->at("listen"), "127.0.0.1:1");
  EXPECT_EQ(s->at("pchannels"), "2");
  EXPECT_EQ(s->at("etcd"), "http://a:1,http://b:2");
  auto c = ResolveConfig({}, {}, *s);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->max_payload_bytes, 1024u);
  std::remove(path.c_str());
}

TEST(ConfigTest, RejectsUnknownKeysAndBadYaml) {
  std::string path = WriteTemp("listn: 127.0.0.1:1\n");
  auto s = LoadConfigFile(path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("unknown key 'listn'"), std::string::npos) << s.status();
  std::remove(path.c_str());
  path = WriteTemp("listen: [unclosed\n");
  EXPECT_FALSE(LoadConfigFile(path).ok());
  std::remove(path.c_str());
  EXPECT_TRUE(absl::IsNotFound(LoadConfigFile("/nonexistent/kf.yaml").status()));
}

}  // namespace
}  // namespace kf::server
