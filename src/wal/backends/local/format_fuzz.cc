// libFuzzer entry point for the local WAL's on-disk parsers (see format_fuzz_body.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "wal/backends/local/format_fuzz_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kf::wal::local::RunFormatFuzzInput(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
