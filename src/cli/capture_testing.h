// Capture: a FILE* backed by a temporary file, read back as text or lines, standing in for
// kfctl's stdout / stderr in the command tests. Test-only; not thread-safe; owns the file
// (deleted when closed). Errors: none (a failed tmpfile() makes the test crash loudly).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace kf::cli::testing {

class Capture {
 public:
  Capture() : f_(std::tmpfile()) {}
  ~Capture() { std::fclose(f_); }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  std::FILE* file() { return f_; }
  std::string Text() {
    std::fflush(f_);
    std::rewind(f_);
    std::string s;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f_)) > 0) s.append(buf, n);
    return s;
  }
  std::vector<std::string> Lines() {
    std::vector<std::string> out;
    std::string t = Text();
    size_t start = 0;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '\n') {
        out.push_back(t.substr(start, i - start));
        start = i + 1;
      }
    }
    return out;
  }

 private:
  std::FILE* f_;
};

}  // namespace kf::cli::testing
