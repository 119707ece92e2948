// RgwProcess: a real Ceph RGW (S3) for integration tests and benchmarks — one monitor, one
// OSD (bluestore on a sparse file) and radosgw, auth off, in a fresh temp directory on free
// loopback ports, started and stopped by pid. Start bootstraps the cluster, creates an S3 user
// and a bucket, and waits until a signed request works (~16 s from nothing).
// The binaries come from the Debian packages ceph-mon, ceph-osd, radosgw and ceph-common.
//
// Thread-safety: one thread drives an RgwProcess. Ownership: owns the child processes (killed
// with SIGKILL in the destructor, and by the kernel if the test process dies first) and the
// temp directory (removed in the destructor).
// Errors: Start returns a status with the tail of the failing daemon's log.
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "storage/object/s3_object_store.h"

namespace kf::object::testing {

class RgwProcess {
 public:
  // True when every Ceph binary the fixture runs is installed.
  static bool BinariesPresent();
  // The verdict for a test binary that wants an RGW: an empty string when RGW can run, else
  // why not. Without the binaries a developer machine skips; with CI set that is a failure
  // the caller must report (`*must_fail` is set).
  static std::string Unavailable(bool* must_fail);

  explicit RgwProcess(const std::string& parent_dir = "");
  ~RgwProcess();
  RgwProcess(const RgwProcess&) = delete;
  RgwProcess& operator=(const RgwProcess&) = delete;

  absl::Status Start(absl::Duration timeout = absl::Seconds(180));
  // Kills radosgw only (the cluster keeps running) / starts it again on the same port.
  void StopRgw();
  absl::Status StartRgw(absl::Duration timeout = absl::Seconds(60));

  // Options for an S3ObjectStore on this RGW's bucket.
  S3Options s3_options() const;
  std::string endpoint() const;
  const std::string& dir() const { return root_; }
  std::string LogTail(const std::string& daemon, size_t bytes = 3000) const;

 private:
  absl::Status Bootstrap(absl::Time deadline);
  absl::Status WaitForS3(absl::Time deadline);
  void KillAll();

  std::string root_;
  std::string conf_;
  int mon_port_ = 0;
  int rgw_port_ = 0;
  pid_t mon_pid_ = -1;
  pid_t osd_pid_ = -1;
  pid_t rgw_pid_ = -1;
};

}  // namespace kf::object::testing
