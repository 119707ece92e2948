// libFuzzer entry point for the S3 XML reader (s3_xml.h): any bytes must give a page/error or
// a status, never a crash; a parsed page is always in strictly increasing key order.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "storage/object/s3_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto page = kf::object::ParseListObjectsV2(in); page.ok()) {
    for (size_t i = 1; i < page->objects.size(); ++i) {
      if (!(page->objects[i - 1].key < page->objects[i].key)) std::abort();
    }
    if (page->truncated && page->next_continuation_token.empty()) std::abort();
  }
  (void)kf::object::ParseS3Error(in);
  return 0;
}
