// KfctlServerTest: the fixture of the kfctl end-to-end suites (header-only; the tests link
// kf_server_testlib and kf_kfctl_testlib). One real `kingfisher run standalone` per suite,
// started in SetUpTestSuite (a start per test would cost seconds each), so a suite's tests
// share its state and must keep to their own vchannels and collections; Run() runs the real
// kfctl against it.
//
// Thread-compatible: gtest runs a suite's tests one after another. Ownership: the fixture owns
// the server and its temp dirs from SetUpTestSuite to TearDownTestSuite. Errors: a server that
// does not start fails SetUpTestSuite and every test of the suite is skipped.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "kfctl_runner.h"
#include "server_process.h"

namespace kf::testing {

class KfctlServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    data_dir_ = std::make_unique<TempDir>();
    work_dir_ = std::make_unique<TempDir>();
    server_ = std::make_unique<ServerProcess>(
        ServerProcess::Options{.data_dir = data_dir_->path() + "/data"});
    ASSERT_TRUE(server_->Start()) << server_->Output();
  }
  static void TearDownTestSuite() {
    server_.reset();  // stops the server before its data dir goes
    data_dir_.reset();
    work_dir_.reset();
  }
  void SetUp() override {
    if (server_ == nullptr || server_->pid() <= 0) GTEST_SKIP() << "server did not start";
  }

  // kfctl with `args` against the server (--endpoint, --timeout 20 first); its stdout and
  // stderr files go to work_dir().
  static KfctlResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--endpoint", server_->address(), "--timeout", "20"});
    return RunKfctl(work_dir(), args);
  }
  // The suite's server (a test may kill and restart it: it comes back on the same addresses).
  static ServerProcess& server() { return *server_; }
  // A temp dir of the suite's for kfctl's output and input files.
  static const std::string& work_dir() { return work_dir_->path(); }

 private:
  inline static std::unique_ptr<TempDir> data_dir_;
  inline static std::unique_ptr<TempDir> work_dir_;
  inline static std::unique_ptr<ServerProcess> server_;
};

}  // namespace kf::testing
