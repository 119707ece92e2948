#include "server/advertise.h"

#include <unistd.h>

#include <climits>

namespace kf::server {

std::string AdvertisedAddress(const std::string& configured, const std::string& bound) {
  if (!configured.empty()) return configured;
  const size_t colon = bound.rfind(':');
  if (colon == std::string::npos) return bound;
  const std::string host = bound.substr(0, colon);
  if (host != "0.0.0.0" && host != "[::]" && host != "::" && !host.empty()) return bound;
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return bound;
  return std::string(name) + bound.substr(colon);
}

}  // namespace kf::server
