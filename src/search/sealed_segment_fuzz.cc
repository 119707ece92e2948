// libFuzzer entry point for the sealed segment decoder (see sealed_segment_fuzz_body.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "search/sealed_segment_fuzz_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kf::search::RunSealedSegmentFuzzInput(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
