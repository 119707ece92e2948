#include "raw_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "bench_util.h"
#include "process_stats.h"

namespace kf::bench {
namespace {

void SendAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) Die(std::string("raw server: send: ") + std::strerror(errno));
    data += w;
    n -= static_cast<size_t>(w);
  }
}

// Reads up to `n` bytes, fewer only at the end of the stream or on an error. Makes no call
// but read(2): it also runs in the forked serving process.
size_t ReadFull(int fd, char* data, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, data + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

void NoDelay(int fd) {
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    Die("raw server: TCP_NODELAY");
  }
}

// A connected pair over loopback: {the client's end, the server's end}.
std::pair<int, int> Connect(int listener, const sockaddr_in& addr) {
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (client < 0 ||
      ::connect(client, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    Die(std::string("raw server: connect: ") + std::strerror(errno));
  }
  const int server = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (server < 0) Die(std::string("raw server: accept: ") + std::strerror(errno));
  NoDelay(client);
  NoDelay(server);
  return {client, server};
}

uint64_t ThreadSwitches() {
  rusage u{};
  ::getrusage(RUSAGE_THREAD, &u);
  return static_cast<uint64_t>(u.ru_nvcsw + u.ru_nivcsw);
}

// The serving process's loop (system calls only, no allocation: it runs in a fork of a
// threaded process). Writes its CPU seconds and context switches per message to `report`.
bool Serve(int from_producer, int to_consumer, int file, std::string* request, int report) {
  const size_t size = request->size();
  const char ack[8] = {};
  const double cpu0 = ThreadCpuSeconds();
  const uint64_t switches0 = ThreadSwitches();
  size_t served = 0;
  for (;;) {
    if (ReadFull(from_producer, request->data(), size) < size) break;  // the producer is done
    if (::write(file, request->data(), size) != static_cast<ssize_t>(size) ||
        ::fdatasync(file) != 0 ||
        ::send(from_producer, ack, sizeof(ack), MSG_NOSIGNAL) != sizeof(ack) ||
        ::send(to_consumer, request->data(), size, MSG_NOSIGNAL) != static_cast<ssize_t>(size)) {
      return false;
    }
    ++served;
  }
  const double n = static_cast<double>(std::max<size_t>(served, 1));
  const double cost[2] = {(ThreadCpuSeconds() - cpu0) / n,
                          static_cast<double>(ThreadSwitches() - switches0) / n};
  return ::write(report, cost, sizeof(cost)) == sizeof(cost);
}

}  // namespace

RawServerResult RawServerRoundTrips(const std::string& path, size_t size, size_t messages,
                                    uint64_t preallocate) {
  if (size < sizeof(int64_t)) Die("raw server: messages of at least 8 bytes");
  const int file = OpenPreallocated(path, preallocate);

  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener, 2) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Die(std::string("raw server: listen: ") + std::strerror(errno));
  }
  const auto [producer, from_producer] = Connect(listener, addr);
  const auto [consumer, to_consumer] = Connect(listener, addr);
  ::close(listener);

  // The server is a process of its own, as a real one is: its wake-ups cross processes.
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) Die("raw server: pipe");
  std::string request(size, '\0');  // allocated before the fork: the child only makes calls
  const pid_t child = ::fork();
  if (child < 0) Die("raw server: fork");
  if (child == 0) {
    for (int fd : {producer, consumer, pipe_fds[0]}) ::close(fd);
    ::_exit(Serve(from_producer, to_consumer, file, &request, pipe_fds[1]) ? 0 : 1);
  }
  for (int fd : {from_producer, to_consumer, pipe_fds[1]}) ::close(fd);

  RawServerResult result;
  std::thread receiver([&, consumer = consumer] {
    std::string message(size, '\0');
    result.latencies.reserve(messages);
    while (ReadFull(consumer, message.data(), size) == size) {
      int64_t sent;
      std::memcpy(&sent, message.data(), sizeof(sent));
      result.latencies.push_back(static_cast<double>(NowNs() - sent) * 1e-9);
    }
  });

  std::string message(size, 'm');
  char ack[8];
  for (size_t i = 0; i < messages; ++i) {
    const int64_t now = NowNs();
    std::memcpy(message.data(), &now, sizeof(now));
    SendAll(producer, message.data(), size);
    if (ReadFull(producer, ack, sizeof(ack)) < sizeof(ack)) Die("raw server: closed early");
  }
  ::shutdown(producer, SHUT_WR);  // the server sees the end and exits, closing its ends
  double cost[2];
  if (ReadFull(pipe_fds[0], reinterpret_cast<char*>(cost), sizeof(cost)) < sizeof(cost)) {
    Die("raw server: the serving process failed");
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Die("raw server: the serving process did not exit cleanly");
  }
  receiver.join();
  result.server_cpu_per_message = cost[0];
  result.server_switches_per_message = cost[1];
  for (int fd : {producer, consumer, pipe_fds[0], file}) ::close(fd);
  ::unlink(path.c_str());
  return result;
}

}  // namespace kf::bench
