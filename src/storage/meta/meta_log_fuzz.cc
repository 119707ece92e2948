// libFuzzer entry point for the embedded metadata store's file parsers (see
// meta_log_fuzz_body.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "storage/meta/meta_log_fuzz_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kf::meta::RunMetaLogFuzzInput(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
