// TempDir: a fresh, empty directory for a test or a benchmark, `$TMPDIR/<tag>_XXXXXX`, removed
// with everything in it when the object goes, so that runs leave nothing behind. Declare it
// before whatever keeps files open in it (members are destroyed in reverse order).
// Header-only; no GoogleTest dependency (the benchmarks' server harness uses it too).
#pragma once

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace kf::testing {

class TempDir {
 public:
  explicit TempDir(std::string_view tag = "kf_test")
      : path_((std::filesystem::temp_directory_path() / (std::string(tag) + "_XXXXXX")).string()) {
    if (::mkdtemp(path_.data()) == nullptr) {
      std::perror(("mkdtemp " + path_).c_str());  // nothing can run without its directory
      std::abort();
    }
  }
  ~TempDir() {
    std::error_code ignored;  // best effort: a leftover directory fails nothing
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kf::testing
