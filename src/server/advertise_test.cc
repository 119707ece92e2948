#include "server/advertise.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>

namespace kf::server {
namespace {

std::string Hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  EXPECT_EQ(::gethostname(name, sizeof(name) - 1), 0);
  return name;
}

TEST(AdvertisedAddressTest, ConfiguredWins) {
  EXPECT_EQ(AdvertisedAddress("kf-1.example:7000", "0.0.0.0:19530"), "kf-1.example:7000");
}

TEST(AdvertisedAddressTest, ConcreteBoundAddressIsKept) {
  EXPECT_EQ(AdvertisedAddress("", "127.0.0.1:19530"), "127.0.0.1:19530");
  EXPECT_EQ(AdvertisedAddress("", "[::1]:19530"), "[::1]:19530");
}

TEST(AdvertisedAddressTest, WildcardHostBecomesTheHostname) {
  EXPECT_EQ(AdvertisedAddress("", "0.0.0.0:19530"), Hostname() + ":19530");
  EXPECT_EQ(AdvertisedAddress("", "[::]:19530"), Hostname() + ":19530");
}

}  // namespace
}  // namespace kf::server
