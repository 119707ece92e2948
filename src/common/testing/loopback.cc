#include "common/testing/loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/absl_compat.h"

namespace kf::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

// The kernel's range of ephemeral ports (ip_local_port_range), or Linux's default.
std::pair<int, int> EphemeralRange() {
  int low = 32768, high = 60999;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d %d", &low, &high) != 2) low = 32768, high = 60999;
    std::fclose(f);
  }
  return {low, high};
}

}  // namespace

int ListenOnLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const sockaddr_in addr = Loopback(port);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, 1) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int FreeLoopbackPort() {
  // Outside the ephemeral range: a port there may become some connection's local port, even a
  // reconnecting client's own (TCP connects a socket to itself when source and destination
  // match), while its server is down for a restart on the same port.
  const auto [low, high] = EphemeralRange();
  const bool below = low - 1 - 10000 >= 65535 - (high + 1);
  const int first = below ? 10000 : high + 1;
  const int last = below ? low - 1 : 65535;
  if (last < first) return 0;
  static std::atomic<uint64_t> draws{0};
  std::mt19937_64 rng(static_cast<uint64_t>(::getpid()) * 1000003u + draws.fetch_add(1) +
                      static_cast<uint64_t>(absl::GetCurrentTimeNanos()));
  std::uniform_int_distribution<int> pick(first, last);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = pick(rng);
    if (const int fd = ListenOnLoopback(port); fd >= 0) {
      ::close(fd);
      return port;
    }
  }
  return 0;
}

std::string HttpGet(int port, std::string_view path, absl::Duration timeout) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  const timeval tv = absl::ToTimeval(timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string response;
  const sockaddr_in addr = Loopback(port);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET " + std::string(path) + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) {
        response.append(buf, static_cast<size_t>(n));
      }
    }
  }
  ::close(fd);
  return response;
}

double MetricSum(int port, std::string_view name) {
  const std::string body = HttpGet(port, "/metrics");
  const bool one_series = !name.empty() && name.back() == '}';
  double sum = -1;
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    if (!absl::StartsWith(line, ToAbsl(name)) || line.size() <= name.size()) continue;
    const char next = line[name.size()];
    if (next != ' ' && (one_series || next != '{')) continue;
    double v = 0;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) sum = std::max(sum, 0.0) + v;
  }
  return sum;
}

}  // namespace kf::testing
