// RunKfctl: runs the real build/bin/kfctl (from KF_BIN_DIR) as a child process for end-to-end
// tests and parses its stdout as JSON lines with nlohmann::json, a parser we did not write.
//
// Thread-compatible. Each run writes kfctl.out / kfctl.err in `dir` (overwritten by the next).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace kf::testing {

struct KfctlResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
  std::vector<nlohmann::json> lines;  // stdout parsed line by line
  bool all_lines_parse = true;
};

// Runs kfctl with `args` to completion (kfctl's own --timeout / --idle-timeout bound every
// run), with `env` added to this process's environment.
KfctlResult RunKfctl(const std::string& dir, const std::vector<std::string>& args,
                     const std::map<std::string, std::string>& env = {});

// "exit=…, stdout, stderr" for failure messages.
std::string Describe(const KfctlResult& r);

}  // namespace kf::testing
