// FlagSet: the benches' command lines, declared instead of hand-parsed. Each flag is a name, the
// variable it sets and a line of help; the usage text is made from them, each default read
// from its variable when the flag is added, so the text cannot drift from the code.
//
// Thread-safety: one thread, at start-up. Ownership: keeps pointers to the added variables,
// which must outlive Parse. Errors: Parse and Fail end the process — --help/-h prints the usage
// on stdout and exits 0; an unknown flag, a missing value, a bad value (the whole string must
// parse and fit: "12x", "nan", or "-1" for an unsigned flag is refused) or a failed check prints
// the reason and the usage on stderr and exits 2.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "bench_util.h"

namespace kf::bench {

class FlagSet {
 public:
  // `argv0` is the program as invoked: the usage line shows it, errors its file name.
  explicit FlagSet(const char* argv0);

  // `--name VALUE` sets *var, a std::string, a double (finite) or an integer type (in range).
  // The help line ends with "(default <*var>)", unless *var is an empty string.
  template <typename T>
  void Add(std::string name, T* var, std::string value_name, std::string help) {
    static_assert(std::is_same_v<T, std::string> || std::is_same_v<T, double> ||
                      (std::is_integral_v<T> && !std::is_same_v<T, bool>),
                  "a flag is a std::string, a double or an integer; AddSwitch for a bool");
    AddFlag(std::move(name), std::move(value_name), WithDefault(std::move(help), *var),
            [var](std::string_view v) { return ParseValue(v, var); });
  }
  // `--name` alone sets *on to true.
  void AddSwitch(std::string name, bool* on, std::string help);
  // --dir (the parent of the run's temp dir; `data` says what goes there) and, for a bench that
  // starts the server, --bin-dir (where `kingfisher` is): both default to DefaultDirs(argv0).
  void AddDataDir(std::string* dir, const std::string& data);
  void AddDirs(BenchDirs* dirs, const std::string& data);

  // Sets the flags from argv[1..argc) or ends the process (see the header comment).
  void Parse(int argc, char** argv) const;
  // For the checks a bench makes after Parse: prints `why` and the usage, exits 2.
  [[noreturn]] void Fail(const std::string& why) const;

 private:
  struct Flag {
    std::string name;
    std::string value_name;  // empty: a switch, which takes no value
    std::string help;
    std::function<bool(std::string_view)> set;  // false: the value is malformed
  };

  void AddFlag(std::string name, std::string value_name, std::string help,
               std::function<bool(std::string_view)> set);
  void PrintUsage(FILE* out) const;

  static std::string WithDefault(std::string help, const std::string& v) {
    return v.empty() ? help : help + " (default " + v + ")";
  }
  static std::string WithDefault(std::string help, double v);
  template <typename T>
  static std::string WithDefault(std::string help, T v) {
    return help + " (default " + std::to_string(v) + ")";
  }

  static bool ParseValue(std::string_view v, std::string* out) {
    out->assign(v);
    return true;
  }
  template <typename T>
  static bool ParseValue(std::string_view v, T* out) {
    T parsed{};
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size()) return false;
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(parsed)) return false;
    }
    *out = parsed;
    return true;
  }

  std::string argv0_;
  std::vector<Flag> flags_;
};

}  // namespace kf::bench
