// The installed client library, used as another project would (docs/architecture.md "The
// client library"): `cmake --install` into a temporary prefix, then examples/client configured
// with find_package(Kingfisher) against that prefix alone, built, and run against a standalone
// server.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "server_process.h"

namespace kf {
namespace {

namespace fs = std::filesystem;
using testing::ServerProcess;
using testing::TempDir;

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs `command` with /bin/sh, stdout and stderr together.
CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  std::FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(InstallTest, AnOutOfTreeProgramBuildsAgainstTheInstalledPackageAndRuns) {
  const char* source_dir = std::getenv("KF_SOURCE_DIR");
  const char* bin_dir = std::getenv("KF_BIN_DIR");
  ASSERT_TRUE(source_dir != nullptr && bin_dir != nullptr)
      << "run through ctest: KF_SOURCE_DIR and KF_BIN_DIR say where the trees are";
  const std::string source = source_dir;
  const std::string build = fs::path(bin_dir).parent_path().string();
  const std::string cmake = KF_CMAKE_COMMAND;
  TempDir dir;
  const fs::path prefix = fs::path(dir.path()) / "prefix";
  const fs::path example = fs::path(dir.path()) / "example";

  CommandResult install =
      RunCommand(cmake + " --install " + Quote(build) + " --prefix " + Quote(prefix.string()));
  ASSERT_EQ(install.exit_code, 0) << install.output;

  // The package: headers, the library, the CMake config; no internal header came along.
  EXPECT_TRUE(fs::exists(prefix / "include/kingfisher/client.h"));
  EXPECT_TRUE(fs::exists(prefix / "lib/cmake/Kingfisher/KingfisherConfig.cmake"));
  EXPECT_TRUE(fs::exists(prefix / "lib/libkingfisher.so"));
  const std::regex include_line(R"re(#include\s+"([^"]+)")re");
  for (const auto& header : fs::directory_iterator(prefix / "include/kingfisher")) {
    const std::string text = ReadFile(header.path());
    for (std::sregex_iterator it(text.begin(), text.end(), include_line), end; it != end; ++it) {
      const std::string inc = (*it)[1];
      EXPECT_TRUE(inc == "absl/status/status.h" || inc == "absl/status/statusor.h" ||
                  std::regex_match(inc, std::regex("kingfisher/[a-z_]+\\.h")))
          << header.path() << " includes " << inc;
    }
  }

  CommandResult configure =
      RunCommand(cmake + " -S " + Quote(source + "/examples/client") + " -B " +
                 Quote(example.string()) + " -DCMAKE_PREFIX_PATH=" + Quote(prefix.string()) +
                 " -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON");
  ASSERT_EQ(configure.exit_code, 0) << configure.output;
  // The example compiles against the prefix alone: neither the source tree's src/ and include/
  // nor the build tree's generated protos are on its include path.
  const std::string commands = ReadFile(example / "compile_commands.json");
  EXPECT_NE(commands.find(prefix.string() + "/include"), std::string::npos) << commands;
  EXPECT_EQ(commands.find(source + "/src"), std::string::npos) << commands;
  EXPECT_EQ(commands.find(source + "/include"), std::string::npos) << commands;
  EXPECT_EQ(commands.find(build + "/proto"), std::string::npos) << commands;
  CommandResult compile = RunCommand(cmake + " --build " + Quote(example.string()));
  ASSERT_EQ(compile.exit_code, 0) << compile.output;

  ServerProcess server({.data_dir = dir.path() + "/data"});
  ASSERT_TRUE(server.Start()) << server.Output();
  CommandResult run =
      RunCommand(Quote((example / "kingfisher_example").string()) + " " + Quote(server.address()));
  ASSERT_EQ(run.exit_code, 0) << run.output << "\nserver:\n" << server.Output();
  EXPECT_TRUE(std::regex_search(run.output,
                                std::regex("appended 3 messages, first id local:[0-9]+\n"
                                           "consumed 3 messages in order\n"
                                           "transaction [0-9]+ committed, consumed as one Txn of "
                                           "4 messages\n"
                                           "inserted 8 rows into collection example[0-9]+ "
                                           "\\(2 shards\\)\n"
                                           "ok\n")))
      << run.output;
}

}  // namespace
}  // namespace kf
