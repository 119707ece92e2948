#include "common/process_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "common/testing/sanitizers.h"
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
  EXPECT_GE(ReadAnonymousBytes(), kBytes / 2);
  // The sampler answers what it read last until its value is older than max_age.
  AnonymousMemory sampled(absl::Hours(1));
  const size_t first = sampled.bytes();
  EXPECT_GE(first, kBytes / 2);
  block.reset();
  EXPECT_EQ(sampled.bytes(), first);
}

// A mapped file's pages are resident once touched, but not anonymous: the kernel can drop them.
TEST(ProcessMemoryTest, MappedFilePagesAreResidentButNotAnonymous) {
  constexpr size_t kBytes = 64 << 20;
  const std::string path = ::testing::TempDir() + "/process_memory_mapped";
  {
    std::ofstream out(path, std::ios::binary);
    const std::string block(1 << 20, 'x');
    for (size_t i = 0; i < kBytes / block.size(); ++i) out << block;
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* p = ::mmap(nullptr, kBytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ASSERT_NE(p, MAP_FAILED);
  const size_t resident = ReadResidentBytes(), anonymous = ReadAnonymousBytes();
  unsigned sum = 0;
  for (size_t i = 0; i < kBytes; i += 4096) sum += static_cast<const unsigned char*>(p)[i];
  EXPECT_EQ(sum, 'x' * (kBytes / 4096));
  EXPECT_GE(ReadResidentBytes(), resident + kBytes / 2);
  // Not 64 MiB more: at most what a sanitizer's shadow of the touched pages takes (ASan: 1/8
  // of them; ThreadSanitizer: up to a shadow page per page, so the bound is 1.5x there: the
  // file's pages counted as anonymous would make it 2x).
  EXPECT_LT(ReadAnonymousBytes(),
            anonymous + (kf::testing::kThreadSanitizer ? kBytes * 3 / 2 : kBytes / 4));
  ::munmap(p, kBytes);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kf
