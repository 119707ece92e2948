// libFuzzer entry point for the objectstore WAL's block objects (see block_fuzz_body.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "wal/backends/objectstore/block_fuzz_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kf::wal::objectstore::RunBlockFuzzInput(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
