// libFuzzer entry point for kfctl's vector file parsers (see vector_file_fuzz_body.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cli/vector_file_fuzz_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kf::cli::RunVectorFileFuzzInput(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
