#include "server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "grpcpp/grpcpp.h"
#include "httplib.h"
#include "kingfisher/v1/streaming.grpc.pb.h"

extern char** environ;

namespace kf::testing {
namespace {

std::string BinPath(const std::string& binary) {
  const char* dir = std::getenv("KF_BIN_DIR");
  return std::string(dir != nullptr ? dir : "build/bin") + "/" + binary;
}

// fork + exec with stdout/stderr to `log_path`. Everything the child needs is prepared before
// fork (only async-signal-safe calls in the child).
pid_t Spawn(const std::string& binary, const std::vector<std::string>& args,
            const std::map<std::string, std::string>& env, const std::string& log_path) {
  std::vector<std::string> argv_s = {BinPath(binary)};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (env.count(kv.substr(0, kv.find('='))) == 0) env_s.push_back(kv);
  }
  for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  int fd = ::open(log_path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  ::close(fd);
  return pid;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What waitpid's `status` says about how the child exited.
ProcessResult Exited(int status) {
  ProcessResult r;
  r.exited = true;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  return r;
}

// Polls waitpid until the child exits or the deadline passes.
ProcessResult Reap(pid_t pid, absl::Duration timeout) {
  ProcessResult r;
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) return Exited(status);
    if (absl::Now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling a condition
  }
}

}  // namespace

ProcessResult RunKingfisher(const std::vector<std::string>& args,
                            const std::map<std::string, std::string>& env, absl::Duration timeout) {
  TempDir logs;
  const std::string log = logs.path() + "/out.log";
  pid_t pid = Spawn("kingfisher", args, env, log);
  ProcessResult r = Reap(pid, timeout);
  r.output = ReadFile(log);
  return r;
}

ServerProcess::ServerProcess(Options options) : options_(std::move(options)) {}

ServerProcess::~ServerProcess() {
  Kill();
  // The default log sits beside the data dir, outside the temp dir that holds it.
  if (options_.log_path.empty() && !log_path_.empty()) {
    std::error_code ignored;  // a destructor must not throw
    std::filesystem::remove(log_path_, ignored);
  }
}

bool ServerProcess::Start(absl::Duration timeout) {
  // A free port is only free when it was picked: a parallel test may draw the same port and
  // bind it before the server does, and the server then refuses to start
  // ("address in use", common/listen_error.h). Before the first start, on ports picked here,
  // pick others and try again; a restart keeps its addresses.
  const bool picked_here = address_.empty() && options_.listen.empty();
  for (int attempt = 1;; ++attempt) {
    Launch();
    if (WaitHealthy(timeout)) return true;
    if (!picked_here || attempt == 5 || !reaped_.has_value() ||
        Output().find("address in use") == std::string::npos) {
      return false;
    }
    address_.clear();
  }
}

void ServerProcess::Launch() {
  reaped_.reset();
  // A restart keeps the addresses, so clients reconnect to the same endpoint.
  if (address_.empty()) {
    auto pick = [this] { return options_.pick_port ? options_.pick_port() : FreeLoopbackPort(); };
    address_ = options_.listen.empty() ? "127.0.0.1:" + std::to_string(pick()) : options_.listen;
    do {
      http_port_ = pick();
    } while (address_ == "127.0.0.1:" + std::to_string(http_port_));
  }
  log_path_ = options_.log_path.empty() ? options_.data_dir + ".log" : options_.log_path;
  std::vector<std::string> args = {"run",           options_.role,
                                   "--listen",      address_,
                                   "--http-listen", "127.0.0.1:" + std::to_string(http_port_),
                                   "--data-dir",    options_.data_dir};
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  pid_ = Spawn(options_.binary, args, options_.env, log_path_);
}

bool ServerProcess::WaitHealthy(absl::Duration timeout) {
  // Ready = /healthz 200 (docs/operations.md): every role says so only once it serves.
  httplib::Client http("127.0.0.1", http_port_);
  http.set_connection_timeout(std::chrono::milliseconds(200));
  http.set_read_timeout(std::chrono::seconds(2));
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      reaped_ = Exited(status);
      return false;  // exited during startup
    }
    httplib::Result r = http.Get("/healthz");
    if (r && r->status == 200) return true;
    // Polling a process we do not control, bounded by the deadline.
    absl::SleepFor(absl::Milliseconds(r ? 20 : 10));
  }
  return false;
}

bool ServerProcess::WaitForReaders(const std::string& pchannel, int n, absl::Duration timeout) {
  return WaitForStatus(
             [&](const kingfisher::v1::GetStatusResponse& resp) {
               for (const auto& p : resp.pchannels()) {
                 if (p.pchannel() == pchannel && p.readers() >= n) return true;
               }
               return false;
             },
             timeout)
      .has_value();
}

std::optional<kingfisher::v1::GetStatusResponse> ServerProcess::WaitForStatus(
    const std::function<bool(const kingfisher::v1::GetStatusResponse&)>& done,
    absl::Duration timeout) {
  auto stub = kingfisher::v1::StreamingCoord::NewStub(
      grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  const absl::Time deadline = absl::Now() + timeout;
  // Polls an observable condition (no fixed sleep): each round trip is the pacing.
  while (absl::Now() < deadline) {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
    ctx.set_wait_for_ready(true);
    kingfisher::v1::GetStatusResponse resp;
    if (stub->GetStatus(&ctx, {}, &resp).ok() && done(resp)) return resp;
  }
  return std::nullopt;
}

ProcessResult ServerProcess::Stop(absl::Duration timeout) {
  if (pid_ > 0) kill(pid_, SIGTERM);
  return WaitForExit(timeout);
}

ProcessResult ServerProcess::WaitForExit(absl::Duration timeout) {
  if (pid_ <= 0) {
    ProcessResult r = reaped_.value_or(ProcessResult{});
    if (reaped_) r.output = Output();
    return r;
  }
  ProcessResult r = Reap(pid_, timeout);
  pid_ = -1;
  r.output = Output();
  return r;
}

void ServerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

bool ServerProcess::Running() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    reaped_ = Exited(status);
    return false;
  }
  return true;
}

std::string ServerProcess::Output() const { return ReadFile(log_path_); }

}  // namespace kf::testing
