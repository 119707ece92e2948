#include "common/listen_error.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kf {
namespace {

// errno of binding a fresh socket to host:port (SO_REUSEADDR, as the listeners set), or 0.
int BindErrno(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  std::string name = host;
  if (name.size() >= 2 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);
  }
  if (getaddrinfo(name.empty() ? nullptr : name.c_str(), service.c_str(), &hints, &found) != 0) {
    return EADDRNOTAVAIL;
  }
  int err = 0;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    const int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    err = bind(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    close(fd);
    if (err != 0) break;
  }
  freeaddrinfo(found);
  return err;
}

}  // namespace

absl::Status ListenError(std::string_view what, const std::string& host, int port) {
  const std::string address = absl::StrCat(std::string(what), ": cannot listen on ", host, ":", port);
  const int err = BindErrno(host, port);
  if (err == EADDRINUSE) {
    return absl::UnavailableError(
        absl::StrCat(address, ": address in use (port ", port, " is held by another process)"));
  }
  if (err == 0) {
    return absl::UnavailableError(address);
  }
  return absl::UnavailableError(absl::StrCat(address, ": ", std::strerror(err)));
}

}  // namespace kf
