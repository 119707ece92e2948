#include "common/testing/loopback.h"

#include <unistd.h>

#include <cstdio>

#include "gtest/gtest.h"

namespace kf::testing {
namespace {

TEST(LoopbackTest, FreePortIsBindableAndOutsideTheEphemeralRange) {
  int low = 32768, high = 60999;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    ASSERT_EQ(std::fscanf(f, "%d %d", &low, &high), 2);
    std::fclose(f);
  }
  for (int i = 0; i < 20; ++i) {
    const int port = FreeLoopbackPort();
    ASSERT_GT(port, 0);
    EXPECT_TRUE(port < low || port > high) << port << " in " << low << "-" << high;
    const int fd = ListenOnLoopback(port);
    EXPECT_GE(fd, 0) << port;
    if (fd >= 0) ::close(fd);
  }
}

}  // namespace
}  // namespace kf::testing
