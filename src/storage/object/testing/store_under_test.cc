#include "storage/object/testing/store_under_test.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "storage/object/fault_object_store.h"
#include "storage/object/local_object_store.h"
#include "storage/object/s3_object_store.h"
#include "storage/object/testing/rgw_process.h"

namespace kf::object::testing {
namespace {

std::string FreshDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "_" + info->name();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                                    ("kf_object_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

StoreUnderTest MakeLocal() {
  StoreUnderTest out;
  out.dir = FreshDir();
  auto store = LocalObjectStore::Open(fs::DefaultFileSystem(), out.dir);
  if (!store.ok()) {
    out.skip_reason = store.status().ToString();
    return out;
  }
  out.store = *std::move(store);
  return out;
}

}  // namespace

RgwProcess* SharedRgw(std::string* why_not) {
  // Started on first use (a local-only run starts none), killed at exit.
  static std::unique_ptr<RgwProcess> rgw;
  static std::string error;
  static bool tried = false;
  if (!tried) {
    tried = true;
    bool must_fail = false;
    error = RgwProcess::Unavailable(&must_fail);
    if (error.empty()) {
      rgw = std::make_unique<RgwProcess>();
      const absl::Time start = absl::Now();
      absl::Status s = rgw->Start();
      if (s.ok()) {
        std::fprintf(stderr, "RGW ready at %s in %.1f s\n", rgw->endpoint().c_str(),
                     absl::ToDoubleSeconds(absl::Now() - start));
      } else {
        error = "RGW did not start: " + s.ToString();
        rgw.reset();
      }
    } else if (!must_fail) {
      error = "SKIP:" + error;
    }
  }
  *why_not = error;
  return rgw.get();
}

StoreUnderTest& StoreUnderTest::operator=(StoreUnderTest&& other) {
  store = std::move(other.store);
  skip = other.skip;
  skip_reason = std::move(other.skip_reason);
  base = std::move(other.base);
  dir = std::move(other.dir);
  other.dir.clear();
  return *this;
}

StoreUnderTest::~StoreUnderTest() {
  store.reset();
  base.reset();
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
}

std::vector<std::string> StoreKinds() { return {"local", "fault", "s3"}; }

StoreUnderTest MakeStoreUnderTest(const std::string& kind) {
  if (kind == "local") return MakeLocal();
  if (kind == "fault") {
    StoreUnderTest out = MakeLocal();
    if (out.store == nullptr) return out;
    out.base = std::move(out.store);
    out.store = std::make_unique<FaultObjectStore>(out.base.get());
    return out;
  }
  StoreUnderTest out;
  if (kind == "s3") {
    std::string why_not;
    RgwProcess* rgw = SharedRgw(&why_not);
    if (rgw == nullptr) {
      out.skip = why_not.rfind("SKIP:", 0) == 0;
      out.skip_reason = out.skip ? why_not.substr(5) : why_not;
      return out;
    }
    auto store = S3ObjectStore::Create(rgw->s3_options());
    if (!store.ok()) {
      out.skip_reason = store.status().ToString();
      return out;
    }
    out.store = *std::move(store);
    return out;
  }
  out.skip_reason = "unknown store kind " + kind;
  return out;
}

}  // namespace kf::object::testing
