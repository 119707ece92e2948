#include "cli/command_util.h"

#include <algorithm>

namespace kf::cli {

void PrintLine(std::FILE* out, const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), out);
  std::fputc('\n', out);
  std::fflush(out);
}

absl::StatusOr<std::unique_ptr<kingfisher::Client>> ConnectFor(const Args& args) {
  kingfisher::ClientOptions o;
  o.endpoint = args.endpoint;
  o.append_timeout = absl::Seconds(args.timeout_seconds);
  o.status_timeout = absl::Seconds(args.timeout_seconds);
  o.ddl_timeout = absl::Seconds(args.timeout_seconds);
  o.attempt_timeout = std::min(o.attempt_timeout, o.append_timeout);
  return kingfisher::Client::Connect(o);
}

}  // namespace kf::cli
