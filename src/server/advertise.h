// The address a server publishes for discovery (ServerConfig::advertise_address).
//
// Pure function over its inputs and the machine's hostname: thread-safe.
#pragma once

#include <string>

namespace kf::server {

// `configured` when set; otherwise `bound` (the listen address actually bound) with a wildcard
// host (0.0.0.0, [::], empty) replaced by this machine's hostname, since clients elsewhere
// cannot dial a wildcard.
std::string AdvertisedAddress(const std::string& configured, const std::string& bound);

}  // namespace kf::server
