#include "cli/vector_file_fuzz_body.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/csv_reader.h"
#include "cli/npy_reader.h"
#include "cli/npy_testing.h"
#include "message/payload.h"

namespace kf::cli {
namespace {

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "vector_file_fuzz invariant violated: %s\n", what);
  std::abort();
}

void CheckMatrix(const Vectors& v) {
  Check(v.rows >= 1, "rows >= 1");
  Check(v.dim >= 1 && v.dim <= kMaxDim, "1 <= dim <= kMaxDim");
  Check(v.values.size() == v.rows * v.dim, "values.size() == rows * dim");
  for (float f : v.values) Check(std::isfinite(f), "finite values");
}

bool SameBits(const Vectors& a, const Vectors& b) {
  if (a.rows != b.rows || a.dim != b.dim || a.values.size() != b.values.size()) return false;
  for (size_t i = 0; i < a.values.size(); ++i) {
    if (std::bit_cast<uint32_t>(a.values[i]) != std::bit_cast<uint32_t>(b.values[i])) return false;
  }
  return true;
}

void CheckNpy(const absl::StatusOr<Vectors>& v) {
  if (!v.ok()) {
    Check(v.status().code() == absl::StatusCode::kInvalidArgument,
          "npy errors are INVALID_ARGUMENT");
    return;
  }
  CheckMatrix(*v);
  auto again = ParseNpy(testing::NpyF32(v->rows, v->dim, v->values, 2));
  Check(again.ok() && SameBits(*v, *again), "npy re-encoding parses back");
}

std::string ToCsv(const Vectors& v) {
  std::string out;
  char buf[32];
  for (uint64_t r = 0; r < v.rows; ++r) {
    for (uint32_t c = 0; c < v.dim; ++c) {
      std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v.values[r * v.dim + c]));
      if (c > 0) out.push_back(',');
      out += buf;
    }
    out.push_back('\n');
  }
  return out;
}

}  // namespace

void RunVectorFileFuzzInput(std::string_view data) {
  CheckNpy(ParseNpy(data));
  // The input as the header dict of a file with the right prefix, and as the data of a valid
  // '<f4' header whose shape comes from the first two bytes: reaches the dict parser and the
  // data checks without having to find the magic first.
  CheckNpy(ParseNpy(testing::NpyBytes(data, std::string_view("\0\0\x80\x3f", 4), 1)));
  if (data.size() >= 2) {
    const uint64_t rows = static_cast<uint8_t>(data[0]) % 8 + 1;
    const uint64_t dim = static_cast<uint8_t>(data[1]) % 8 + 1;
    auto v = ParseNpy(testing::NpyBytes(testing::NpyDict("<f4", rows, dim), data.substr(2)));
    CheckNpy(v);
    if (data.size() - 2 != rows * dim * 4) Check(!v.ok(), "npy data of the wrong size rejected");
  }

  auto csv = ParseCsv(data);
  if (!csv.ok()) {
    Check(csv.status().code() == absl::StatusCode::kInvalidArgument,
          "csv errors are INVALID_ARGUMENT");
    return;
  }
  CheckMatrix(*csv);
  auto again = ParseCsv(ToCsv(*csv));
  Check(again.ok() && SameBits(*csv, *again), "csv re-formatting parses back");
}

}  // namespace kf::cli
