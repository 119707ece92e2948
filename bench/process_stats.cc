#include "process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/testing/loopback.h"

namespace kf::bench {
namespace {

std::string ProcDir(pid_t pid) {
  return pid <= 0 ? std::string("/proc/self") : "/proc/" + std::to_string(pid);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The value of the "name:\t<number>" line of a /proc status file, or 0.
uint64_t StatusField(const std::string& status, const std::string& name) {
  const size_t at = status.find("\n" + name + ":");
  if (at == std::string::npos) return 0;
  return std::strtoull(status.c_str() + at + name.size() + 2, nullptr, 10);
}

}  // namespace

double CpuSeconds(pid_t pid) {
  if (pid <= 0) {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
    return sec(ru.ru_utime) + sec(ru.ru_stime);
  }
  const std::string stat = ReadFile(ProcDir(pid) + "/stat");
  // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::vector<std::string> fields;
  size_t pos = close + 2;
  while (pos < stat.size()) {
    size_t end = stat.find(' ', pos);
    if (end == std::string::npos) end = stat.size();
    fields.push_back(stat.substr(pos, end - pos));
    pos = end + 1;
  }
  if (fields.size() < 13) return 0;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (std::stod(fields[11]) + std::stod(fields[12])) / ticks;  // utime, stime
}

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

uint64_t ContextSwitches(pid_t pid) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(ProcDir(pid) + "/task", ec)) {
    const std::string status = ReadFile(task.path().string() + "/status");
    total += StatusField(status, "voluntary_ctxt_switches") +
             StatusField(status, "nonvoluntary_ctxt_switches");
  }
  return total;
}

double MetricSum(int http_port, std::string_view name) {
  const std::string body = kf::testing::HttpGet(http_port, "/metrics");
  double sum = 0;
  bool found = false;
  for (size_t at = 0, end; at < body.size(); at = end + 1) {
    end = std::min(body.find('\n', at), body.size());
    const std::string_view line(body.data() + at, end - at);
    if (line.size() <= name.size() || line.substr(0, name.size()) != name) continue;
    if (line[name.size()] != '{' && line[name.size()] != ' ') continue;  // a longer name
    const std::string value(line.substr(line.rfind(' ') + 1));
    char* parsed_to = nullptr;
    const double v = std::strtod(value.c_str(), &parsed_to);
    if (parsed_to == value.c_str()) continue;
    sum += v;
    found = true;
  }
  return found ? sum : -1;
}

}  // namespace kf::bench
