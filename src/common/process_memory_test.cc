#include "common/process_memory.h"

#include <cstring>
#include <memory>

#include "gtest/gtest.h"

namespace kf {
namespace {

TEST(ProcessMemoryTest, ResidentBytesGrowWithTouchedMemory) {
  const size_t before = ReadResidentBytes();
  ASSERT_GT(before, 0u);
  constexpr size_t kBytes = 64 << 20;
  std::unique_ptr<char[]> block(new char[kBytes]);
  std::memset(block.get(), 1, kBytes);               // resident only once touched
  asm volatile("" : : "r"(block.get()) : "memory");  // the stores happen: the block escapes
  EXPECT_GE(ReadResidentBytes(), before + kBytes / 2);
  // The sampler answers what it read last until its value is older than max_age.
  ResidentMemory sampled(absl::Hours(1));
  const size_t first = sampled.bytes();
  EXPECT_GE(first, before + kBytes / 2);
  block.reset();
  EXPECT_EQ(sampled.bytes(), first);
}

}  // namespace
}  // namespace kf
