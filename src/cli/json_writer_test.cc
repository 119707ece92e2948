#include "cli/json_writer.h"

#include <string>

#include "gtest/gtest.h"

namespace kf::cli {
namespace {

TEST(JsonQuoteTest, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(JsonQuote(""), R"("")");
  EXPECT_EQ(JsonQuote("plain"), R"("plain")");
  EXPECT_EQ(JsonQuote("a\"b"), R"("a\"b")");
  EXPECT_EQ(JsonQuote("a\\b"), R"("a\\b")");
  EXPECT_EQ(JsonQuote("\n\r\t\b\f"), R"("\n\r\t\b\f")");
  EXPECT_EQ(JsonQuote(std::string("\x01\x1f\x7f", 3)), R"("\u0001\u001f\u007f")");
  EXPECT_EQ(JsonQuote(std::string("a\0b", 3)), R"("a\u0000b")");
  EXPECT_EQ(JsonQuote("/"), R"("/")");
}

TEST(JsonQuoteTest, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(JsonQuote("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x90\x9f"),
            "\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x90\x9f\"");
  EXPECT_EQ(JsonQuote("\xff"), R"("\ufffd")");
  EXPECT_EQ(JsonQuote("\xc3"), R"("\ufffd")");                                // truncated
  EXPECT_EQ(JsonQuote("\xc0\xaf"), R"("\ufffd\ufffd")");                      // overlong
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), R"("\ufffd\ufffd\ufffd")");            // surrogate
  EXPECT_EQ(JsonQuote("\xf4\x90\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")");  // > U+10FFFF
  // Base64 `_tc` values pass through untouched.
  EXPECT_EQ(JsonQuote("AAEC+/8="), R"("AAEC+/8=")");
}

TEST(JsonWriterTest, PlacesCommasAndNests) {
  JsonWriter w;
  w.BeginObject();
  w.Key("a").String("x");
  w.Key("b").Null();
  w.Key("c").BeginArray().Int(-1).Uint(18446744073709551615u).Bool(true).EndArray();
  w.Key("d").BeginObject().EndObject();
  w.Key("e")
      .BeginArray()
      .BeginObject()
      .Key("k")
      .String("v")
      .EndObject()
      .BeginObject()
      .EndObject()
      .EndArray();
  w.EndObject();
  EXPECT_EQ(w.str(),
            R"({"a":"x","b":null,"c":[-1,18446744073709551615,true],"d":{},"e":[{"k":"v"},{}]})");
}

TEST(JsonWriterTest, EscapesKeys) {
  JsonWriter w;
  w.BeginObject().Key("we\"ird\n").String("v").EndObject();
  EXPECT_EQ(w.str(), R"({"we\"ird\n":"v"})");
}

}  // namespace
}  // namespace kf::cli
