#include "cli/command_util.h"

#include <algorithm>
#include <chrono>

namespace kf::cli {

void PrintLine(std::FILE* out, const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), out);
  std::fputc('\n', out);
  std::fflush(out);
}

absl::StatusOr<std::unique_ptr<kingfisher::Client>> ConnectFor(const Args& args) {
  kingfisher::ClientOptions o;
  o.endpoint = args.endpoint;
  const auto timeout = std::chrono::duration_cast<kingfisher::Duration>(
      std::chrono::duration<double>(args.timeout_seconds));
  o.append_timeout = timeout;
  o.status_timeout = timeout;
  o.ddl_timeout = timeout;
  o.attempt_timeout = std::min(o.attempt_timeout, o.append_timeout);
  o.tls = args.tls;
  return kingfisher::Client::Connect(o);
}

}  // namespace kf::cli
