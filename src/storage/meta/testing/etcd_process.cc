#include "storage/meta/testing/etcd_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/loopback.h"

namespace kf::meta::testing {
namespace {

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
  PickPorts();
}

void EtcdProcess::PickPorts() {
  client_port_ = ::kf::testing::FreeLoopbackPort();
  do {
    peer_port_ = ::kf::testing::FreeLoopbackPort();
  } while (peer_port_ == client_port_);
  do {
    metrics_port_ = ::kf::testing::FreeLoopbackPort();
  } while (metrics_port_ == client_port_ || metrics_port_ == peer_port_);
}

EtcdProcess::~EtcdProcess() {
  Kill();
  std::error_code ec;
  std::filesystem::remove_all(root_, ec);
}

std::string EtcdProcess::endpoint() const {
  return absl::StrCat(tls_.cert_file.empty() ? "http" : "https", "://127.0.0.1:", client_port_);
}

absl::Status EtcdProcess::Start(absl::Duration timeout) {
  if (pid_ > 0) return absl::FailedPreconditionError("etcd already running");
  // A free port is only free when it was picked: a parallel test may draw the same port and
  // bind it before etcd does. Before the first start nobody knows the ports yet, so pick
  // others and try again; a restart must keep them.
  for (int attempt = 1;; ++attempt) {
    std::error_code ec;
    const uintmax_t log_before = std::filesystem::file_size(log_path_, ec);  // 0 if absent
    absl::Status s = StartOnce(timeout);
    if (s.ok()) {
      started_ = true;
      return s;
    }
    if (started_ || attempt == 5 ||
        LogSince(ec ? 0 : log_before).find("address already in use") == std::string::npos) {
      return s;
    }
    PickPorts();
  }
}

std::string EtcdProcess::LogSince(uintmax_t offset) const {
  std::ifstream in(log_path_);
  in.seekg(static_cast<std::streamoff>(offset));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status EtcdProcess::StartOnce(absl::Duration timeout) {
  const std::string client = endpoint();
  const std::string peer = absl::StrCat("http://127.0.0.1:", peer_port_);
  std::vector<std::string> args = {
      EtcdBinary(),
      "--name=kf",
      "--data-dir=" + data_dir_,
      "--listen-client-urls=" + client,
      "--advertise-client-urls=" + client,
      "--listen-peer-urls=" + peer,
      "--initial-advertise-peer-urls=" + peer,
      "--initial-cluster=kf=" + peer,
      "--logger=zap",
      "--heartbeat-interval=10",
      "--election-timeout=100",
      absl::StrCat("--listen-metrics-urls=http://127.0.0.1:", metrics_port_)};
  if (!tls_.cert_file.empty()) {
    args.insert(args.end(), {"--cert-file=" + tls_.cert_file, "--key-file=" + tls_.key_file,
                             "--trusted-ca-file=" + tls_.client_ca_file, "--client-cert-auth"});
  }
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
    if (::kf::testing::HttpGet(metrics_port_, "/health", absl::Seconds(1))
            .find("\"health\":\"true\"") != std::string::npos) {
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
