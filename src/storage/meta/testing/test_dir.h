// FreshTestDir: an empty directory of the running test for a store's files (header-only,
// GoogleTest only): `<TempDir>/<prefix>_<pid>_<test name>`, removed first if it exists.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace kf::meta::testing {

inline std::filesystem::path FreshTestDir(std::string_view prefix) {
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                              (std::string(prefix) + "_" + std::to_string(::getpid()) + "_" +
                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  return dir;
}

}  // namespace kf::meta::testing
