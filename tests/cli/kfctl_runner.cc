#include "kfctl_runner.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

extern char** environ;

namespace kf::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs build/bin/kfctl with `args` to completion (kfctl's own --timeout / --idle-timeout bound
// every run); stdout and stderr go to files in `dir`.
}  // namespace

KfctlResult RunKfctl(const std::string& dir, const std::vector<std::string>& args,
                     const std::map<std::string, std::string>& env) {
  const char* bin_dir = std::getenv("KF_BIN_DIR");
  std::string bin = std::string(bin_dir ? bin_dir : "build/bin") + "/kfctl";
  std::string out_path = dir + "/kfctl.out", err_path = dir + "/kfctl.err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> full = {bin};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (!env.count(kv.substr(0, kv.find('=')))) env_strings.push_back(std::move(kv));
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& kv : env_strings) envp.push_back(kv.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  KfctlResult r;
  int rc = posix_spawn(&pid, bin.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    r.err = "posix_spawn failed";
    return r;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(out_path);
  r.err = ReadFile(err_path);
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      r.all_lines_parse = false;
    } else {
      r.lines.push_back(std::move(j));
    }
  }
  return r;
}

std::string Describe(const KfctlResult& r) {
  return "exit=" + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

}  // namespace kf::testing
