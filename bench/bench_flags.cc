#include "bench_flags.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <utility>

namespace kf::bench {

FlagSet::FlagSet(const char* argv0) : argv0_(argv0) {}

void FlagSet::AddFlag(std::string name, std::string value_name, std::string help,
                      std::function<bool(std::string_view)> set) {
  flags_.push_back({std::move(name), std::move(value_name), std::move(help), std::move(set)});
}

void FlagSet::AddSwitch(std::string name, bool* on, std::string help) {
  AddFlag(std::move(name), "", std::move(help), [on](std::string_view) { return *on = true; });
}

void FlagSet::AddDataDir(std::string* dir, const std::string& data) {
  *dir = DefaultDirs(argv0_.c_str()).dir;
  // The help names the default by where it is rather than spelling out this build's path.
  AddFlag("--dir", "DIR", "temp data (" + data + ") goes under DIR (default <build>/bench-data)",
          [dir](std::string_view v) { return ParseValue(v, dir); });
}

void FlagSet::AddDirs(BenchDirs* dirs, const std::string& data) {
  AddDataDir(&dirs->dir, data);
  dirs->bin_dir = DefaultDirs(argv0_.c_str()).bin_dir;
  AddFlag("--bin-dir", "DIR", "where the kingfisher binary is (default: next to this one)",
          [dirs](std::string_view v) { return ParseValue(v, &dirs->bin_dir); });
}

std::string FlagSet::WithDefault(std::string help, double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", v);
  return help + " (default " + text + ")";
}

void FlagSet::Parse(int argc, char** argv) const {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      PrintUsage(stdout);
      std::exit(0);
    }
    const auto flag =
        std::find_if(flags_.begin(), flags_.end(), [a](const Flag& f) { return f.name == a; });
    if (flag == flags_.end()) {
      Fail((a.starts_with("-") ? "unknown flag " : "unexpected argument ") + std::string(a));
    }
    if (flag->value_name.empty()) {
      flag->set("");
      continue;
    }
    if (i + 1 >= argc) Fail(flag->name + " needs a value (" + flag->value_name + ")");
    const std::string_view v = argv[++i];
    if (!flag->set(v)) Fail(flag->name + ": bad value '" + std::string(v) + "'");
  }
}

void FlagSet::Fail(const std::string& why) const {
  std::fprintf(stderr, "%s: %s\n", std::filesystem::path(argv0_).filename().string().c_str(),
               why.c_str());
  PrintUsage(stderr);
  std::exit(2);
}

void FlagSet::PrintUsage(FILE* out) const {
  size_t width = 0;
  for (const Flag& f : flags_) width = std::max(width, f.name.size() + 1 + f.value_name.size());
  std::fprintf(out, "usage: %s [flags]\n", argv0_.c_str());
  for (const Flag& f : flags_) {
    const std::string left = f.value_name.empty() ? f.name : f.name + " " + f.value_name;
    std::fprintf(out, "  %-*s    %s\n", static_cast<int>(width), left.c_str(), f.help.c_str());
  }
}

}  // namespace kf::bench
