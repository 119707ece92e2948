#include "common/testing/loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
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
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << port;
    ::close(fd);
  }
}

}  // namespace
}  // namespace kf::testing
