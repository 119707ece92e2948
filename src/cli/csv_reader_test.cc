// ParseCsv: accepted forms, each rejection with its line number, truncation at every byte;
// and ReadVectorFile's dispatch by extension.
#include "cli/csv_reader.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/npy_testing.h"
#include "cli/vector_file.h"
#include "gtest/gtest.h"

namespace kf::cli {
namespace {

TEST(CsvReaderTest, Valid) {
  for (std::string text : {
           std::string("1,-2.5,3e2\n.5,5.,-0\n"),
           std::string("1,-2.5,3e2\n.5,5.,-0"),            // no final newline
           std::string("1,-2.5,3E+2\r\n.5,5.,-0\r\n"),     // CRLF
           std::string(" 1 ,\t-2.5, +3e2\n.5 , 5.,-0e0"),  // blanks around values
       }) {
    auto v = ParseCsv(text);
    ASSERT_TRUE(v.ok()) << text << ": " << v.status();
    EXPECT_EQ(v->rows, 2u);
    EXPECT_EQ(v->dim, 3u);
    EXPECT_EQ(v->values, (std::vector<float>{1, -2.5f, 300, 0.5f, 5, -0.0f}));
  }
  auto one = ParseCsv("7");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->rows, 1u);
  EXPECT_EQ(one->dim, 1u);
}

void ExpectRejected(const std::string& text, std::string_view needle) {
  auto v = ParseCsv(text);
  ASSERT_FALSE(v.ok()) << "accepted: " << text;
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << v.status();
  EXPECT_NE(std::string(v.status().message()).find(needle), std::string::npos)
      << "want \"" << needle << "\" in: " << v.status();
}

TEST(CsvReaderTest, RejectsEmptyAndBlankLines) {
  ExpectRejected("", "no rows");
  ExpectRejected("\n", "line 1: blank line");
  ExpectRejected("1,2\n\n3,4\n", "line 2: blank line");
  ExpectRejected("1,2\n\n", "line 2: blank line");  // only one final newline is optional
  ExpectRejected("1,2\n \t\n", "line 2: blank line");
  ExpectRejected("1,2\n\r\n", "line 2: blank line");
}

TEST(CsvReaderTest, RejectsRowsOfAnotherWidth) {
  ExpectRejected("1,2\n3,4\n5\n", "line 3: 1 values, want 2 (the width of line 1)");
  ExpectRejected("1,2\n3,4,5\n", "line 2: more than 2 values");
  std::string wide = "1";
  for (int i = 0; i < 32768; ++i) wide += ",1";
  ExpectRejected(wide, "line 1: more than 32768 values");
}

TEST(CsvReaderTest, RejectsBadValues) {
  ExpectRejected("1,,2", "line 1, value 2: empty");
  ExpectRejected("1,2,", "line 1, value 3: empty");
  ExpectRejected(",1", "line 1, value 1: empty");
  ExpectRejected("1,2\n3,nan", "line 2, value 2: not a number: 'nan'");
  for (const char* bad : {"inf", "-inf", "Infinity", "NaN", "0x1p3", "1e", "1e+", "1.5f", "--1",
                          "+", "-", ".", "1 2", "\"1\"", "1;2", "a", "1.2.3", "e5",
                          "\xef\xbb\xbf"
                          "1"}) {
    ExpectRejected(bad, "line 1, value 1: not a number");
  }
  ExpectRejected("1\n1e39", "line 2, value 1: '1e39' is out of float32 range");
  ExpectRejected("-3.5e38", "out of float32 range");
  ExpectRejected("x,y\n1,2", "line 1, value 1: not a number: 'x'");  // a header line
  ExpectRejected(std::string("1,\0", 3), "not a number: '\\x00'");
}

TEST(CsvReaderTest, EveryTruncationParsesOrFailsCleanly) {
  const std::string text = "1.5,-2\n3e1,4.25\r\n-5,.5\n";
  for (size_t n = 0; n <= text.size(); ++n) {
    auto v = ParseCsv(text.substr(0, n));
    if (v.ok()) {
      EXPECT_EQ(v->values.size(), v->rows * v->dim) << "cut at " << n;
      if (v->rows > 1) {
        EXPECT_EQ(v->dim, 2u) << "cut at " << n;
      }
    } else {
      EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << "cut at " << n;
    }
  }
  // A cut inside the last row leaves a short row: line 3 is named.
  auto cut = ParseCsv(text.substr(0, text.size() - 4));
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(std::string(cut.status().message()).find("line 3"), std::string::npos) << cut.status();
}

class VectorFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = ::testing::TempDir() + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
};

TEST_F(VectorFileTest, DispatchesByExtension) {
  auto npy = ReadVectorFile(Write("v.NPY", testing::NpyF32(1, 2, {1, 2})));
  ASSERT_TRUE(npy.ok()) << npy.status();
  EXPECT_EQ(npy->values, (std::vector<float>{1, 2}));
  auto csv = ReadVectorFile(Write("v.csv", "1,2\n"));
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(csv->dim, 2u);
  // The extension decides: CSV text in a .npy file is not an npy file.
  const std::string mislabeled = Write("csv_in.npy", "1,2\n");
  auto bad = ReadVectorFile(mislabeled);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(bad.status().message()).rfind(mislabeled + ": .npy: not a .npy file", 0),
            0u)
      << bad.status();
}

TEST_F(VectorFileTest, Errors) {
  auto txt = ReadVectorFile(Write("v.txt", "1,2\n"));
  EXPECT_EQ(txt.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(txt.status().message()).find("want .npy or .csv"), std::string::npos);
  auto missing = ReadVectorFile(::testing::TempDir() + "/no_such_file.csv");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  const std::string dir = ::testing::TempDir() + "/a_directory.csv";
  std::filesystem::create_directories(dir);
  EXPECT_FALSE(ReadVectorFile(dir).ok());
}

}  // namespace
}  // namespace kf::cli
