#include "otlp/otlp_receiver.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

extern char** environ;

namespace kf::testing {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool DepsInstalled(const std::string& dir) {
  return Exists(dir + "/node_modules/protobufjs/package.json") &&
         Exists(dir +
                "/node_modules/@elastic/mockotlpserver/opentelemetry/proto/collector/trace/"
                "v1/trace_service.proto");
}

// Runs argv to completion with stdout/stderr inherited; returns its exit status.
absl::StatusOr<int> Run(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  if (rc != 0)
    return absl::FailedPreconditionError(absl::StrCat("spawn ", args[0], ": ", strerror(rc)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

absl::Status EnsureDeps(const std::string& dir) {
  if (DepsInstalled(dir)) return absl::OkStatus();
  // Several test binaries may start at once: one installs, the others wait on the lock.
  int lock_fd = ::open((dir + "/.npm-ci.lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock_fd < 0) return absl::FailedPreconditionError("cannot create npm lock file");
  ::flock(lock_fd, LOCK_EX);
  absl::Status status;
  if (!DepsInstalled(dir)) {
    auto rc = Run({"npm", "ci", "--prefix", dir, "--no-audit", "--no-fund"});
    if (!rc.ok()) {
      status = rc.status();
    } else if (*rc != 0 || !DepsInstalled(dir)) {
      status = absl::FailedPreconditionError(absl::StrCat("npm ci in ", dir, " failed: ", *rc));
    }
  }
  ::flock(lock_fd, LOCK_UN);
  ::close(lock_fd);
  return status;
}

trace::AttributeValue ToAttribute(const nlohmann::json& v) {
  if (v.contains("stringValue")) return v["stringValue"].get<std::string>();
  if (v.contains("boolValue")) return v["boolValue"].get<bool>();
  if (v.contains("intValue")) {
    int64_t i = 0;
    (void)absl::SimpleAtoi(v["intValue"].get<std::string>(), &i);
    return i;
  }
  if (v.contains("doubleValue")) return v["doubleValue"].get<double>();
  if (v.contains("arrayValue")) {
    std::vector<std::string> out;
    for (const auto& e : v["arrayValue"]["values"]) {
      if (e.contains("stringValue")) out.push_back(e["stringValue"].get<std::string>());
    }
    return out;
  }
  return std::string();
}

std::map<std::string, trace::AttributeValue> ToAttributes(const nlohmann::json& obj) {
  std::map<std::string, trace::AttributeValue> out;
  for (auto it = obj.begin(); it != obj.end(); ++it) out[it.key()] = ToAttribute(it.value());
  return out;
}

uint64_t ToU64(const nlohmann::json& v) {
  uint64_t out = 0;
  if (v.is_string()) (void)absl::SimpleAtoi(v.get<std::string>(), &out);
  if (v.is_number()) out = v.get<uint64_t>();
  return out;
}

DecodedSpan ToSpan(nlohmann::json j) {
  DecodedSpan s;
  s.trace_id = j.value("traceId", "");
  s.span_id = j.value("spanId", "");
  s.parent_span_id = j.value("parentSpanId", "");
  s.name = j.value("name", "");
  s.kind = j.value("kind", 0);
  s.flags = j.value("flags", 0u);
  s.start_time_unix_nano = ToU64(j["startTimeUnixNano"]);
  s.end_time_unix_nano = ToU64(j["endTimeUnixNano"]);
  s.attributes = ToAttributes(j["attributes"]);
  for (const auto& e : j["events"]) {
    s.events.push_back(
        {e.value("name", ""), ToU64(e["timeUnixNano"]), ToAttributes(e["attributes"])});
  }
  s.status_code = j["status"].value("code", 0);
  s.status_message = j["status"].value("message", "");
  s.scope = j.value("scope", "");
  s.service_name = j.value("serviceName", "");
  s.raw = std::move(j);
  return s;
}

}  // namespace

std::string OtlpReceiverDir() {
  if (const char* src = std::getenv("KF_SOURCE_DIR"); src != nullptr && *src != '\0') {
    return std::string(src) + "/tests/otlp";
  }
  return KF_OTLP_RECEIVER_DIR;  // compile-time fallback, set by tests/CMakeLists.txt
}

absl::StatusOr<std::unique_ptr<OtlpReceiver>> OtlpReceiver::Start(absl::Duration timeout) {
  const std::string dir = OtlpReceiverDir();
  if (absl::Status s = EnsureDeps(dir); !s.ok()) return s;

  std::unique_ptr<OtlpReceiver> r(new OtlpReceiver());
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl =
      absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/kf-otlp-XXXXXX.jsonl");
  int fd = ::mkstemps(tmpl.data(), 6);
  if (fd < 0) return absl::InternalError("mkstemps failed");
  ::close(fd);
  r->output_path_ = tmpl;

  int in_pipe[2];
  int out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  std::string script = dir + "/receiver.js";
  std::vector<char*> argv = {const_cast<char*>("node"), script.data(), const_cast<char*>("0"),
                             r->output_path_.data(), nullptr};
  pid_t pid;
  int rc = posix_spawnp(&pid, "node", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  if (rc != 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    return absl::FailedPreconditionError(absl::StrCat("spawn node: ", strerror(rc)));
  }
  r->pid_ = pid;
  r->stdin_fd_ = in_pipe[1];

  // Read "ready <port>\n" from its stdout.
  std::string line;
  const absl::Time deadline = absl::Now() + timeout;
  while (line.find('\n') == std::string::npos) {
    int wait_ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (wait_ms <= 0) break;
    pollfd p{out_pipe[0], POLLIN, 0};
    if (::poll(&p, 1, wait_ms) <= 0) continue;
    char buf[256];
    ssize_t n = ::read(out_pipe[0], buf, sizeof(buf));
    if (n <= 0) break;  // the receiver died
    line.append(buf, static_cast<size_t>(n));
  }
  ::close(out_pipe[0]);
  if (!line.starts_with("ready ") ||
      !absl::SimpleAtoi(line.substr(6, line.find('\n') - 6), &r->port_)) {
    return absl::DeadlineExceededError(
        absl::StrCat("OTLP receiver did not become ready: '", line, "'"));
  }
  return r;
}

OtlpReceiver::~OtlpReceiver() {
  Stop();
  if (!output_path_.empty()) ::unlink(output_path_.c_str());
}

std::string OtlpReceiver::base_url() const { return absl::StrCat("http://127.0.0.1:", port_); }

void OtlpReceiver::Stop() {
  if (stdin_fd_ >= 0) {
    ::close(stdin_fd_);
    stdin_fd_ = -1;
  }
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
}

absl::StatusOr<std::vector<DecodedSpan>> OtlpReceiver::Spans() const {
  std::ifstream in(output_path_);
  if (!in) return absl::NotFoundError("receiver output file missing");
  std::vector<DecodedSpan> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      if (in.eof()) break;  // a line still being written
      return absl::DataLossError(absl::StrCat("bad receiver line: ", line));
    }
    try {
      out.push_back(ToSpan(std::move(j)));
    } catch (const nlohmann::json::exception& e) {
      return absl::DataLossError(absl::StrCat("unexpected receiver line: ", e.what()));
    }
  }
  return out;
}

absl::StatusOr<std::vector<DecodedSpan>> OtlpReceiver::WaitForSpans(size_t n,
                                                                    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    auto spans = Spans();
    if (!spans.ok()) return spans.status();
    if (spans->size() >= n) return spans;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("receiver got ", spans->size(), " of ", n, " spans"));
    }
    // Polling a file written by another process: there is nothing to wait on but time.
    absl::SleepFor(absl::Milliseconds(20));
  }
}

}  // namespace kf::testing
