#include "cli/npy_testing.h"

#include <bit>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/coding.h"

namespace kf::cli::testing {

std::string NpyBytes(std::string_view dict, std::string_view data, int major) {
  const size_t prefix = 8 + (major == 1 ? 2 : 4);
  std::string header(dict);
  const size_t unpadded = prefix + header.size() + 1;  // + '\n'
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  if (major == 1) {
    PutFixed16(&out, static_cast<uint16_t>(header.size()));
  } else {
    PutFixed32(&out, static_cast<uint32_t>(header.size()));
  }
  out += header;
  out.append(data);
  return out;
}

std::string NpyDict(std::string_view descr, uint64_t rows, uint64_t dim) {
  return absl::StrCat("{'descr': '", ToAbsl(descr), "', 'fortran_order': False, 'shape': (", rows,
                      ", ", dim, "), }");
}

std::string Float32Bytes(const std::vector<float>& values) {
  std::string out;
  for (float v : values) PutFixed32(&out, std::bit_cast<uint32_t>(v));
  return out;
}

std::string Float64Bytes(const std::vector<double>& values) {
  std::string out;
  for (double v : values) PutFixed64(&out, std::bit_cast<uint64_t>(v));
  return out;
}

std::string NpyF32(uint64_t rows, uint32_t dim, const std::vector<float>& values, int major) {
  return NpyBytes(NpyDict("<f4", rows, dim), Float32Bytes(values), major);
}

}  // namespace kf::cli::testing
