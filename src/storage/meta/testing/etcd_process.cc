#include "storage/meta/testing/etcd_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kf::meta::testing {
namespace {

int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// One HTTP/1.0 GET on loopback; the whole response, or "" if the connection failed.
std::string HttpGet(int port, const char* path) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  timeval tv{.tv_sec = 1, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    if (::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[1024];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof(buf))) > 0) response.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return response;
}

std::string EtcdBinary() {
  const char* bin = std::getenv("KF_ETCD_BIN");
  return bin != nullptr ? bin : "/usr/bin/etcd";
}

}  // namespace

EtcdProcess::EtcdProcess(const std::string& parent_dir) {
  const std::filesystem::path parent = parent_dir.empty() ? std::filesystem::temp_directory_path()
                                                          : std::filesystem::path(parent_dir);
  std::string tmpl = (parent / "kf_etcd_XXXXXX").string();
  root_ = ::mkdtemp(tmpl.data());
  data_dir_ = root_ + "/data";
  log_path_ = root_ + "/etcd.log";
  client_port_ = FreeLoopbackPort();
  peer_port_ = FreeLoopbackPort();
}

EtcdProcess::~EtcdProcess() {
  Kill();
  std::error_code ec;
  std::filesystem::remove_all(root_, ec);
}

std::string EtcdProcess::endpoint() const {
  return absl::StrCat("http://127.0.0.1:", client_port_);
}

absl::Status EtcdProcess::Start(absl::Duration timeout) {
  if (pid_ > 0) return absl::FailedPreconditionError("etcd already running");
  const std::string client = endpoint();
  const std::string peer = absl::StrCat("http://127.0.0.1:", peer_port_);
  std::vector<std::string> args = {EtcdBinary(),
                                   "--name=kf",
                                   "--data-dir=" + data_dir_,
                                   "--listen-client-urls=" + client,
                                   "--advertise-client-urls=" + client,
                                   "--listen-peer-urls=" + peer,
                                   "--initial-advertise-peer-urls=" + peer,
                                   "--initial-cluster=kf=" + peer,
                                   "--logger=zap",
                                   "--heartbeat-interval=10",
                                   "--election-timeout=100"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Everything the child touches is prepared before fork: only async-signal-safe calls there.
  const int log_fd = ::open(log_path_.c_str(), O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0644);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  if (pid_ < 0) return absl::InternalError("fork failed");

  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::InternalError(absl::StrCat("etcd exited during startup:\n", LogTail()));
    }
    if (HttpGet(client_port_, "/health").find("\"health\":\"true\"") != std::string::npos) {
      return absl::OkStatus();
    }
    // Pacing of a readiness poll (each probe is also bounded by the connect/read timeout).
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Kill();
  return absl::DeadlineExceededError(absl::StrCat("etcd not healthy in time:\n", LogTail()));
}

void EtcdProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string EtcdProcess::LogTail(size_t bytes) const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string log = ss.str();
  return log.size() > bytes ? log.substr(log.size() - bytes) : log;
}

}  // namespace kf::meta::testing
