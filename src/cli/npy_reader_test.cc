// ParseNpy: valid v1/v2/v3 files, every corruption the header comment names, and truncation
// at every byte.
#include "cli/npy_reader.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cli/npy_testing.h"
#include "gtest/gtest.h"

namespace kf::cli {
namespace {

using testing::Float32Bytes;
using testing::Float64Bytes;
using testing::NpyBytes;
using testing::NpyDict;
using testing::NpyF32;

const std::vector<float> kSix = {1.0f, -2.5f, 3.25f, 0.0f, -0.0f, 1e-30f};

TEST(NpyReaderTest, ValidFloat32InEveryVersion) {
  for (int major : {1, 2, 3}) {
    const std::string file = NpyF32(2, 3, kSix, major);
    EXPECT_EQ(file.find('\n') + 1, 128u) << "the data starts at 128, as numpy writes it";
    auto v = ParseNpy(file);
    ASSERT_TRUE(v.ok()) << "v" << major << ": " << v.status();
    EXPECT_EQ(v->rows, 2u);
    EXPECT_EQ(v->dim, 3u);
    EXPECT_EQ(v->values, kSix);
  }
}

TEST(NpyReaderTest, Float64IsConvertedToFloat32) {
  auto v = ParseNpy(NpyBytes(NpyDict("<f8", 1, 3), Float64Bytes({0.1, -1e30, 3.0})));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->values, (std::vector<float>{0.1f, -1e30f, 3.0f}));
}

TEST(NpyReaderTest, HeaderDictSyntaxVariants) {
  const std::string data = Float32Bytes({1, 2});
  for (std::string dict : {
           std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }"),
           std::string(R"({"shape":(1,2),"fortran_order":False,"descr":"<f4"})"),
           std::string("{ 'descr' : '<f4' ,\t'fortran_order' : False , 'shape' : ( 1 , 2 , ) }"),
       }) {
    auto v = ParseNpy(NpyBytes(dict, data));
    ASSERT_TRUE(v.ok()) << dict << ": " << v.status();
    EXPECT_EQ(v->rows, 1u);
    EXPECT_EQ(v->dim, 2u);
  }
}

// The error of ParseNpy(bytes) is INVALID_ARGUMENT and mentions `needle`.
void ExpectRejected(const std::string& bytes, std::string_view needle) {
  auto v = ParseNpy(bytes);
  ASSERT_FALSE(v.ok()) << "accepted; want an error with: " << needle;
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << v.status();
  EXPECT_NE(std::string(v.status().message()).find(needle), std::string::npos)
      << "want \"" << needle << "\" in: " << v.status();
}

std::string WithDict(const std::string& dict, size_t data_bytes = 8) {
  return NpyBytes(dict, std::string(data_bytes, '\0'));
}

TEST(NpyReaderTest, RejectsBadPrefix) {
  const std::string good = NpyF32(1, 2, {1, 2});
  ExpectRejected("", "bad magic");
  ExpectRejected("\x93NUMPX" + good.substr(6), "bad magic");
  ExpectRejected("PK\x03\x04", "bad magic");
  for (auto [major, minor] : {std::pair{0, 0}, {4, 0}, {1, 1}, {2, 1}, {255, 0}}) {
    std::string bad = good;
    bad[6] = static_cast<char>(major);
    bad[7] = static_cast<char>(minor);
    ExpectRejected(bad, "unsupported format version");
  }
  ExpectRejected(good.substr(0, 7), "truncated before the version");
  ExpectRejected(good.substr(0, 9), "truncated before the header length");
  ExpectRejected(good.substr(0, 100), "truncated header");
  std::string no_newline = good;
  no_newline[good.find('\n')] = ' ';
  ExpectRejected(no_newline, "does not end with '\\n'");
  // A v2 length read as v1 (and the reverse) does not line up.
  std::string v2_as_v1 = NpyF32(1, 2, {1, 2}, 2);
  v2_as_v1[6] = 1;
  EXPECT_FALSE(ParseNpy(v2_as_v1).ok());
}

TEST(NpyReaderTest, RejectsMalformedHeaderDicts) {
  const char* kMalformed = "malformed header";
  ExpectRejected(WithDict("'descr': '<f4'"), kMalformed);                      // no braces
  ExpectRejected(WithDict("{'descr' '<f4'}"), kMalformed);                     // no colon
  ExpectRejected(WithDict("{'descr': '<f4}"), kMalformed);                     // unterminated
  ExpectRejected(WithDict("{'descr': '<f\\x34'}"), "escapes");                 // escapes
  ExpectRejected(WithDict("{descr: '<f4'}"), kMalformed);                      // bare key
  ExpectRejected(WithDict("{'descr': [('a', '<f4')]}"), "structured dtypes");  // record dtype
  ExpectRejected(WithDict("{'descr': '<f4' 'shape': (1, 2)}"), "expected ',' or '}'");
  ExpectRejected(WithDict("{'descr': '<f4'} x"), "unexpected text after the dict");
  ExpectRejected(WithDict("{'descr': None}"), kMalformed);
  ExpectRejected(WithDict("{'descr': '<f4', 'fortran_order': false}"), kMalformed);
  ExpectRejected(WithDict("{'shape': (1 2)}"), "expected ',' or ')'");
  ExpectRejected(WithDict("{'shape': (-1, 2)}"), "non-negative integer");
  ExpectRejected(WithDict("{'shape': (1, 99999999999999999999999)}"), "out of range");
  ExpectRejected(WithDict("{'shape': (2)}"), "is not a tuple");
  ExpectRejected(WithDict("{"), kMalformed);
  ExpectRejected(WithDict(""), kMalformed);
}

TEST(NpyReaderTest, RejectsWrongKeys) {
  ExpectRejected(WithDict("{'descr': '<f4', 'shape': (1, 2)}"), "no 'fortran_order'");
  ExpectRejected(WithDict("{'fortran_order': False, 'shape': (1, 2)}"), "no 'descr'");
  ExpectRejected(WithDict("{'descr': '<f4', 'fortran_order': False}"), "no 'shape'");
  ExpectRejected(
      WithDict("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), 'extra': True}"),
      "unexpected header key 'extra'");
  ExpectRejected(WithDict("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
                          "'shape': (1, 2)}"),
                 "duplicate key 'descr'");
}

TEST(NpyReaderTest, RejectsWrongTypes) {
  for (const char* descr : {"<i4", ">f4", "|u1", "<f2", "<c8", "f4", "<f4 "}) {
    ExpectRejected(WithDict(NpyDict(descr, 1, 2)), "is not supported");
  }
  ExpectRejected(WithDict("{'descr': True, 'fortran_order': False, 'shape': (1, 2)}"),
                 "'descr' must be a string");
  ExpectRejected(WithDict("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2)}"),
                 "fortran_order True");
  ExpectRejected(WithDict("{'descr': '<f4', 'fortran_order': 'no', 'shape': (1, 2)}"),
                 "'fortran_order' must be True or False");
  ExpectRejected(WithDict("{'descr': '<f4', 'fortran_order': False, 'shape': '1,2'}"),
                 "'shape' must be a tuple");
}

TEST(NpyReaderTest, RejectsWrongShapes) {
  auto dict = [](std::string shape) {
    return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + "}";
  };
  ExpectRejected(WithDict(dict("(8,)")), "shape (8,) has rank 1, want 2");
  ExpectRejected(WithDict(dict("()")), "has rank 0");
  ExpectRejected(WithDict(dict("(1, 2, 1)")), "shape (1, 2, 1) has rank 3");
  ExpectRejected(WithDict(dict("(0, 2)"), 0), "0 rows");
  ExpectRejected(WithDict(dict("(2, 0)"), 0), "dim must be 1..32768");
  ExpectRejected(WithDict(dict("(1, 32769)"), 32769 * 4), "dim must be 1..32768");
  ExpectRejected(WithDict(dict("(18446744073709551615, 32768)")), "too large");
}

TEST(NpyReaderTest, RejectsDataOfTheWrongLength) {
  const std::string dict = NpyDict("<f4", 2, 3);
  ExpectRejected(NpyBytes(dict, Float32Bytes(kSix).substr(0, 23)),
                 "data truncated: shape (2, 3) needs 24 bytes, the file has 23");
  ExpectRejected(NpyBytes(dict, ""), "the file has 0");
  ExpectRejected(NpyBytes(dict, Float32Bytes(kSix) + "x"), "1 bytes after the data");
  ExpectRejected(NpyBytes(NpyDict("<f8", 1, 1), Float32Bytes({1})), "needs 8 bytes");
}

TEST(NpyReaderTest, RejectsNonFiniteValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ExpectRejected(NpyF32(2, 2, {0, 0, 0, nan}), "row 1, column 1: the value is not finite");
  ExpectRejected(NpyF32(1, 2, {-inf, 0}), "row 0, column 0");
  ExpectRejected(NpyBytes(NpyDict("<f8", 1, 2), Float64Bytes({1.0, 1e300})),
                 "row 0, column 1: 1e+300 does not fit a float32");
  ExpectRejected(
      NpyBytes(NpyDict("<f8", 1, 1), Float64Bytes({std::numeric_limits<double>::quiet_NaN()})),
      "not finite");
}

TEST(NpyReaderTest, EveryTruncationIsRejected) {
  for (int major : {1, 2}) {
    const std::string file = NpyF32(2, 3, kSix, major);
    for (size_t n = 0; n < file.size(); ++n) {
      auto v = ParseNpy(file.substr(0, n));
      EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument)
          << "v" << major << " cut at " << n << " of " << file.size();
    }
    EXPECT_TRUE(ParseNpy(file).ok());
  }
}

TEST(NpyReaderTest, EveryHeaderByteFlipIsRejectedOrHarmless) {
  // Flipping any header byte either fails cleanly or still yields a well-formed 2x3 matrix
  // (e.g. a space turned into a tab).
  const std::string file = NpyF32(2, 3, kSix);
  for (size_t i = 0; i <= file.find('\n'); ++i) {
    for (uint8_t bit = 1; bit != 0; bit = static_cast<uint8_t>(bit << 1)) {
      std::string bad = file;
      bad[i] = static_cast<char>(bad[i] ^ bit);
      auto v = ParseNpy(bad);
      if (v.ok()) {
        EXPECT_EQ(v->values.size(), v->rows * v->dim) << "byte " << i;
      } else {
        EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
      }
    }
  }
}

}  // namespace
}  // namespace kf::cli
