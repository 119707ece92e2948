#include "bench_util.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "process_stats.h"

namespace kf::bench {
namespace {
std::string& ProgramName() {
  static std::string* name = new std::string("bench");
  return *name;
}
}  // namespace

void SetProgramName(std::string name) {
  ProgramName() = std::move(name);
  // As the server and kfctl do: Debian's absl is built with per-lock deadlock detection on,
  // a global graph update per Mutex acquisition that would be measured as our cost.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

void Die(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", ProgramName().c_str(), what.c_str());
  std::exit(1);
}

std::string MakeRunDir(const std::string& dir, const std::string& prefix) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string tmpl = dir + "/" + prefix + "_XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp in " + dir);
  return tmpl;
}

BenchDirs DefaultDirs(const char* argv0) {
  namespace stdfs = std::filesystem;
  const stdfs::path self = stdfs::weakly_canonical(stdfs::absolute(argv0)).parent_path();
  return {.dir = (self.parent_path() / "bench-data").string(), .bin_dir = self.string()};
}

std::string StartRun(const std::string& program, const BenchDirs& dirs) {
  SetProgramName(program);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  setenv("KF_BIN_DIR", dirs.bin_dir.c_str(), /*overwrite=*/1);
  return MakeRunDir(dirs.dir, program);
}

namespace {
void WriteAll(int fd, const std::string& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) Die("write " + path);
    done += static_cast<size_t>(n);
  }
}
}  // namespace

int OpenPreallocated(const std::string& path, uint64_t preallocate) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("open " + path);
  if (preallocate > 0 &&
      (::fallocate(fd, 0, 0, static_cast<off_t>(preallocate)) != 0 || ::fdatasync(fd) != 0)) {
    Die("fallocate " + path);
  }
  return fd;
}

std::vector<double> RawWriteSync(const std::string& path, size_t size, double seconds,
                                 size_t max_ops, uint64_t preallocate, double* cpu_per_op) {
  const int fd = OpenPreallocated(path, preallocate);
  std::string buf(size, 'r');
  std::vector<double> lat;
  const double cpu0 = ThreadCpuSeconds();
  const auto start = Clock::now();
  while (Seconds(Clock::now() - start) < seconds && lat.size() < max_ops) {
    const auto t0 = Clock::now();
    WriteAll(fd, buf, path);
    if (::fdatasync(fd) != 0) Die("fdatasync " + path);
    lat.push_back(Seconds(Clock::now() - t0));
  }
  if (cpu_per_op != nullptr) {
    *cpu_per_op =
        (ThreadCpuSeconds() - cpu0) / static_cast<double>(std::max<size_t>(lat.size(), 1));
  }
  ::close(fd);
  ::unlink(path.c_str());
  return lat;
}

std::vector<double> PacedGroupCommit(const std::string& path, size_t size, double rate,
                                     double seconds) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("open " + path);
  const auto total = static_cast<uint64_t>(seconds * rate);
  const std::chrono::duration<double> interval(1.0 / rate);
  const auto start = Clock::now();
  auto due = [&](uint64_t i) {
    return start + std::chrono::duration_cast<Clock::duration>(interval * static_cast<double>(i));
  };
  std::vector<double> lat;
  lat.reserve(total);
  std::string group;
  for (uint64_t next = 0; next < total;) {
    std::this_thread::sleep_until(due(next));  // pacing the open loop
    uint64_t end = next + 1;                   // every message due by now joins the group
    for (const auto now = Clock::now(); end < total && due(end) <= now;) ++end;
    group.assign((end - next) * size, 'g');
    WriteAll(fd, group, path);
    if (::fdatasync(fd) != 0) Die("fdatasync " + path);
    const auto durable = Clock::now();
    for (; next < end; ++next) lat.push_back(Seconds(durable - due(next)));
  }
  ::close(fd);
  ::unlink(path.c_str());
  return lat;
}

void FutexWait(std::atomic<int>* word, int expected) {
  static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free);
  syscall(SYS_futex, reinterpret_cast<int*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr,
          0);
}

void FutexWake(std::atomic<int>* word) {
  syscall(SYS_futex, reinterpret_cast<int*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

std::vector<double> WakeRoundTrips(size_t rounds, double* cpu_per_wake) {
  absl::Mutex mu;
  bool ball_here = false;  // true: the partner's turn
  std::vector<double> lat;
  lat.reserve(rounds);
  double partner_cpu = 0;
  std::thread partner([&] {
    const double cpu0 = ThreadCpuSeconds();
    for (size_t i = 0; i < rounds; ++i) {
      absl::MutexLock lock(&mu);
      mu.Await(absl::Condition(&ball_here));
      ball_here = false;
    }
    partner_cpu = ThreadCpuSeconds() - cpu0;
  });
  const double cpu0 = ThreadCpuSeconds();
  for (size_t i = 0; i < rounds; ++i) {
    const auto t0 = Clock::now();
    absl::MutexLock lock(&mu);
    ball_here = true;
    auto back = [&ball_here] { return !ball_here; };
    mu.Await(absl::Condition(&back));
    lat.push_back(Seconds(Clock::now() - t0));
  }
  const double own_cpu = ThreadCpuSeconds() - cpu0;
  partner.join();
  if (cpu_per_wake != nullptr) {
    *cpu_per_wake = (own_cpu + partner_cpu) / static_cast<double>(2 * std::max<size_t>(rounds, 1));
  }
  return lat;
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double total = 0;
  for (double x : v) total += x;
  return total / static_cast<double>(v.size());
}

namespace {
double Rank(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1,
                         static_cast<size_t>(p * static_cast<double>(sorted.size())))];
}
}  // namespace

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return Rank(v, p);
}

Quantiles Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Quantiles q;
  q.count = v.size();
  q.p50 = Rank(v, 0.50);
  q.p90 = Rank(v, 0.90);
  q.p99 = Rank(v, 0.99);
  q.max = v.empty() ? 0 : v.back();
  return q;
}

}  // namespace kf::bench
