#include "message/properties.h"

#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kf {
namespace {

std::vector<std::string> Keys(const Properties& p) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : p) keys.push_back(k);
  return keys;
}

TEST(PropertiesTest, KeepsKeysSortedWhateverTheInsertionOrder) {
  Properties p;
  p.insert_or_assign("_vc", "a");
  p.insert_or_assign("_t", "1");
  p.Assign("_tt", "x");
  p["_ik"] = "p:1";
  p.emplace("z", "");
  p.emplace("", "empty key");
  EXPECT_EQ(Keys(p), (std::vector<std::string>{"", "_ik", "_t", "_tt", "_vc", "z"}));
}

// Keys compare byte-wise as unsigned (std::string's order): random operations on keys that are
// prefixes of each other, differ in one byte, or hold bytes >= 0x80 agree with std::map.
TEST(PropertiesTest, AgreesWithStdMapOnRandomKeysAndOperations) {
  std::mt19937 rng(7);
  const std::string alphabet = std::string("_ab\x7f\x80\xff", 6);
  auto random_key = [&] {
    std::string k(rng() % 5, '\0');
    for (char& c : k) c = alphabet[rng() % alphabet.size()];
    return k;
  };
  for (int round = 0; round < 200; ++round) {
    Properties p;
    std::map<std::string, std::string> model;
    for (int op = 0; op < 40; ++op) {
      const std::string k = random_key(), v = std::to_string(op);
      switch (rng() % 5) {
        case 0:
          EXPECT_EQ(p.emplace(k, v), model.emplace(k, v).second);
          break;
        case 1:
          p.insert_or_assign(k, v);
          model.insert_or_assign(k, v);
          break;
        case 2:
          p.Assign(k, v);
          model[k] = v;
          break;
        case 3:
          EXPECT_EQ(p.erase(k), model.erase(k));
          break;
        case 4:
          EXPECT_EQ(p.contains(k), model.contains(k));
          break;
      }
    }
    ASSERT_EQ(p.size(), model.size());
    auto it = p.begin();
    for (const auto& [k, v] : model) {
      EXPECT_EQ(it->first, k);
      EXPECT_EQ(it->second, v);
      ++it;
    }
  }
}

TEST(PropertiesTest, EmplaceNeverOverwritesAndInsertOrAssignDoes) {
  Properties p;
  EXPECT_TRUE(p.emplace("k", "first"));
  EXPECT_FALSE(p.emplace("k", "second"));
  EXPECT_EQ(p.at("k"), "first");
  p.insert_or_assign("k", "third");
  EXPECT_EQ(p.at("k"), "third");
  p.Assign("k", "fourth");
  EXPECT_EQ(p.at("k"), "fourth");
  EXPECT_EQ(p.size(), 1u);
}

TEST(PropertiesTest, FindEraseAndAt) {
  Properties p{{"b", "2"}, {"a", "1"}, {"b", "ignored"}};  // as std::map: the first b wins
  EXPECT_EQ(p.size(), 2u);
  EXPECT_EQ(p.at("b"), "2");
  EXPECT_TRUE(p.contains("a"));
  EXPECT_EQ(p.find("c"), p.end());
  EXPECT_THROW((void)p.at("c"), std::out_of_range);
  EXPECT_EQ(p.erase("c"), 0u);
  EXPECT_EQ(p.erase("a"), 1u);
  EXPECT_FALSE(p.contains("a"));
  EXPECT_EQ(p["new"], "");  // operator[] inserts an empty value
  EXPECT_EQ(Keys(p), (std::vector<std::string>{"b", "new"}));
}

TEST(PropertiesTest, EqualityComparesEntries) {
  Properties a{{"x", "1"}, {"y", "2"}};
  Properties b;
  b["y"] = "2";
  b["x"] = "1";
  EXPECT_EQ(a, b);
  b["x"] = "other";
  EXPECT_NE(a, b);
}

TEST(PropertiesTest, AdoptSortsAnyOrderAndRefusesRepeatedKeys) {
  Properties p{{"keep", "me"}};
  EXPECT_EQ(p.Adopt({{"b", "2"}, {"c", "3"}, {"a", "1"}}), std::nullopt);
  EXPECT_EQ(Keys(p), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(p.Adopt({{"x", "1"}, {"y", "2"}, {"x", "3"}}), "x");
  EXPECT_EQ(Keys(p), (std::vector<std::string>{"a", "b", "c"}));  // unchanged
}

}  // namespace
}  // namespace kf
