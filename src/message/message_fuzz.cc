// libFuzzer entry point for the message module's parsers (see message_fuzz_body.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "google/protobuf/stubs/logging.h"
#include "message/message_fuzz_body.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Protobuf logs every non-UTF-8 string it rejects; at fuzzing rates that is pure noise.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kf::RunMessageFuzzInput(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
