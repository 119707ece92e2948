#include "storage/object/testing/store_under_test.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "storage/object/fault_object_store.h"
#include "storage/object/local_object_store.h"

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

std::vector<std::string> StoreKinds() { return {"local", "fault"}; }

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
  out.skip_reason = "unknown store kind " + kind;
  return out;
}

}  // namespace kf::object::testing
