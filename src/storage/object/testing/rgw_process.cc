#include "storage/object/testing/rgw_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/testing/loopback.h"

namespace kf::object::testing {
namespace {

constexpr char kAccessKey[] = "KFACCESSKEY";
constexpr char kSecretKey[] = "KFSECRETKEY";
constexpr char kBucket[] = "kf-test";
constexpr const char* kBinaries[] = {"ceph-authtool", "monmaptool", "ceph-mon",     "ceph-osd",
                                     "ceph",          "radosgw",    "radosgw-admin"};

std::string FindBinary(const std::string& name) {
  for (const char* dir : {"/usr/bin", "/usr/sbin", "/bin", "/sbin"}) {
    const std::string path = absl::StrCat(dir, "/", name);
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

std::string NewUuid() {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) | rd());
  const uint64_t a = rng(), b = rng();
  return absl::StrFormat("%08x-%04x-4%03x-8%03x-%012x", a >> 32, (a >> 16) & 0xffff, a & 0xfff,
                         b >> 52, b & 0xffffffffffffull);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Starts `args` with stdout+stderr appended to `log`; the child dies with the test process.
pid_t Spawn(std::vector<std::string> args, const std::string& log) {
  args[0] = FindBinary(args[0]);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Everything the child touches is prepared before fork: only async-signal-safe calls there.
  const int log_fd = ::open(log.c_str(), O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0644);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  return pid;
}

void KillAndReap(pid_t* pid) {
  if (*pid <= 0) return;
  ::kill(*pid, SIGKILL);
  int status = 0;
  ::waitpid(*pid, &status, 0);
  *pid = -1;
}

// Runs a tool to completion (killed at `deadline`); its stdout, or an error with its output.
absl::StatusOr<std::string> Run(const std::vector<std::string>& args, const std::string& dir,
                                absl::Time deadline) {
  static int seq = 0;
  const std::string out = absl::StrCat(dir, "/log/tool-", ++seq, ".out");
  pid_t pid = Spawn(args, out);
  if (pid < 0) return absl::InternalError("fork failed");
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      std::string output = ReadFile(out);
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return output;
      return absl::InternalError(absl::StrCat(args[0], " ", args.size() > 1 ? args[1] : "",
                                              " failed (status ", status, "):\n", output));
    }
    if (absl::Now() >= deadline) {
      KillAndReap(&pid);
      return absl::DeadlineExceededError(absl::StrCat(args[0], " timed out:\n", ReadFile(out)));
    }
    // Pacing of the poll for a child's exit.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

bool RgwProcess::BinariesPresent() {
  for (const char* b : kBinaries) {
    if (FindBinary(b).empty()) return false;
  }
  return true;
}

std::string RgwProcess::Unavailable(bool* must_fail) {
  *must_fail = false;
  if (BinariesPresent()) return "";
  const char* ci = std::getenv("CI");
  *must_fail = ci != nullptr && *ci != '\0';
  return "Ceph RGW binaries missing (apt-get install --no-install-recommends ceph-mon ceph-osd "
         "radosgw ceph-common; scripts/deps.sh does)";
}

RgwProcess::RgwProcess(const std::string& parent_dir) {
  // Absolute: the daemons resolve the paths in ceph.conf from their own working directory.
  const std::filesystem::path parent =
      std::filesystem::absolute(parent_dir.empty() ? std::filesystem::temp_directory_path()
                                                   : std::filesystem::path(parent_dir));
  std::string tmpl = (parent / "kf_rgw_XXXXXX").string();
  root_ = ::mkdtemp(tmpl.data());
  conf_ = root_ + "/ceph.conf";
  mon_port_ = ::kf::testing::FreeLoopbackPort();
  rgw_port_ = ::kf::testing::FreeLoopbackPort();
}

RgwProcess::~RgwProcess() {
  KillAll();
  std::error_code ec;
  std::filesystem::remove_all(root_, ec);
}

void RgwProcess::KillAll() {
  KillAndReap(&rgw_pid_);
  KillAndReap(&osd_pid_);
  KillAndReap(&mon_pid_);
}

std::string RgwProcess::endpoint() const { return absl::StrCat("http://127.0.0.1:", rgw_port_); }

S3Options RgwProcess::s3_options() const {
  return S3Options{.endpoint = endpoint(),
                   .bucket = kBucket,
                   .access_key = kAccessKey,
                   .secret_key = kSecretKey};
}

std::string RgwProcess::LogTail(const std::string& daemon, size_t bytes) const {
  std::string log = ReadFile(absl::StrCat(root_, "/log/", daemon, ".out"));
  log += ReadFile(absl::StrCat(root_, "/log/ceph-", daemon, ".log"));
  return log.size() > bytes ? log.substr(log.size() - bytes) : log;
}

absl::Status RgwProcess::Start(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status s = Bootstrap(deadline);
  if (!s.ok()) KillAll();
  return s;
}

absl::Status RgwProcess::Bootstrap(absl::Time deadline) {
  for (const char* d : {"mon", "osd/ceph-0", "run", "log", "rgw"}) {
    std::filesystem::create_directories(absl::StrCat(root_, "/", d));
  }
  const std::string fsid = NewUuid();
  const std::string& b = root_;
  std::ofstream(conf_) << absl::StrFormat(R"([global]
fsid = %s
mon_host = v2:127.0.0.1:%d
mon_initial_members = a
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
ms_bind_ipv6 = false
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
auth_allow_insecure_global_id_reclaim = true
# With auth off the clients must allow crc mode, or radosgw hangs for minutes.
ms_mon_client_mode = crc
ms_client_mode = crc
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
osd_crush_chooseleaf_type = 0
mon_max_pg_per_osd = 1000
# ceph-mon refuses to start on a filesystem with under 5 percent free (large, full CI disks).
mon_data_avail_crit = 0
mon_data_avail_warn = 0
run_dir = %s/run
admin_socket = %s/run/$cluster-$name.asok
log_file = %s/log/$cluster-$name.log
pid_file = %s/run/$cluster-$name.pid
keyring = %s/keyring
[mon]
mon_data = %s/mon/$cluster-$id
[osd]
osd_data = %s/osd/$cluster-$id
osd_objectstore = bluestore
bluestore_block_path = %s/osd/$cluster-$id/block.file
bluestore_block_size = 4294967296
bluestore_block_create = true
bluestore_block_db_create = false
bluestore_block_wal_create = false
osd_memory_target = 939524096
bluestore_cache_autotune = false
bluestore_cache_size = 134217728
[client.rgw.kf]
# Without tcp_nodelay a small GET waits ~40 ms for delayed ACKs.
rgw_frontends = beast endpoint=127.0.0.1:%d tcp_nodelay=1
rgw_data = %s/rgw
)",
                                          fsid, mon_port_, b, b, b, b, b, b, b, b, rgw_port_, b);
  auto run = [&](std::vector<std::string> args) { return Run(args, root_, deadline); };
  if (auto r = run({"ceph-authtool", "--create-keyring", b + "/keyring", "--gen-key", "-n", "mon.",
                    "--cap", "mon", "allow *"});
      !r.ok()) {
    return r.status();
  }
  if (auto r = run({"monmaptool", "--create", "--addv", "a",
                    absl::StrCat("[v2:127.0.0.1:", mon_port_, "]"), "--fsid", fsid, b + "/monmap"});
      !r.ok()) {
    return r.status();
  }
  if (auto r = run({"ceph-mon", "-c", conf_, "--mkfs", "-i", "a", "--monmap", b + "/monmap",
                    "--keyring", b + "/keyring"});
      !r.ok()) {
    return r.status();
  }
  mon_pid_ = Spawn({"ceph-mon", "-f", "-c", conf_, "-i", "a"}, b + "/log/mon.a.out");

  const std::string osd_uuid = NewUuid();
  auto id = run({"ceph", "-c", conf_, "--connect-timeout", "30", "osd", "new", osd_uuid});
  if (!id.ok())
    return absl::Status(id.status().code(),
                        absl::StrCat(id.status().message(), "\nmon log:\n", LogTail("mon.a")));
  const std::string osd_id(absl::StripAsciiWhitespace(*id));
  if (auto r = run({"ceph-osd", "-c", conf_, "-i", osd_id, "--mkfs", "--osd-uuid", osd_uuid});
      !r.ok()) {
    return r.status();
  }
  osd_pid_ = Spawn({"ceph-osd", "-f", "-c", conf_, "-i", osd_id},
                   absl::StrCat(b, "/log/osd.", osd_id, ".out"));
  for (;;) {
    auto stat = run({"ceph", "-c", conf_, "--connect-timeout", "10", "osd", "stat"});
    if (stat.ok() && absl::StrContains(*stat, " 1 up")) break;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("OSD not up in time:\n", LogTail(absl::StrCat("osd.", osd_id))));
    }
    // Pacing of a readiness poll (each `ceph` call takes a few hundred ms itself).
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (auto r = run({"radosgw-admin", "-c", conf_, "user", "create", "--uid=kf", "--display-name=kf",
                    absl::StrCat("--access-key=", kAccessKey),
                    absl::StrCat("--secret-key=", kSecretKey)});
      !r.ok()) {
    return r.status();
  }
  return StartRgw(deadline - absl::Now());
}

void RgwProcess::StopRgw() { KillAndReap(&rgw_pid_); }

absl::Status RgwProcess::StartRgw(absl::Duration timeout) {
  if (rgw_pid_ > 0) return absl::FailedPreconditionError("radosgw already running");
  rgw_pid_ = Spawn({"radosgw", "-f", "-c", conf_, "-n", "client.rgw.kf"},
                   root_ + "/log/client.rgw.kf.out");
  absl::Status s = WaitForS3(absl::Now() + timeout);
  if (!s.ok()) KillAndReap(&rgw_pid_);
  return s;
}

absl::Status RgwProcess::WaitForS3(absl::Time deadline) {
  auto store = S3ObjectStore::Create(s3_options());
  if (!store.ok()) return store.status();
  absl::Status last;
  while (absl::Now() < deadline) {
    int status = 0;
    if (::waitpid(rgw_pid_, &status, WNOHANG) == rgw_pid_) {
      rgw_pid_ = -1;
      return absl::InternalError(
          absl::StrCat("radosgw exited during startup:\n", LogTail("client.rgw.kf")));
    }
    // CreateBucket retries connection failures itself until its own short deadline.
    last = (*store)->CreateBucket(std::min(deadline, absl::Now() + absl::Seconds(2)));
    if (last.ok()) return last;
    // Only "not listening yet" is worth waiting out; anything else is a real answer.
    if (!absl::IsUnavailable(last) && !absl::IsDeadlineExceeded(last)) return last;
  }
  return absl::DeadlineExceededError(absl::StrCat("radosgw not ready in time (", last.ToString(),
                                                  "):\n", LogTail("client.rgw.kf")));
}

}  // namespace kf::object::testing
