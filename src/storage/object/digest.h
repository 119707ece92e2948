// The digests S3 requests carry: MD5 (Content-MD5 and the ETag of a single-part object) and
// SHA-256 (x-amz-content-sha256, the signed payload hash), over OpenSSL's EVP.
// Thread-safety: pure functions. Errors: none (OpenSSL failures abort: they mean a broken
// library, not bad input).
#pragma once

#include <string>
#include <string_view>

namespace kf::object {

std::string Md5(std::string_view data);     // 16 raw bytes
std::string Sha256(std::string_view data);  // 32 raw bytes
std::string HexLower(std::string_view bytes);
std::string Base64(std::string_view bytes);

}  // namespace kf::object
