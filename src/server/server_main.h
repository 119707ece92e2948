// Main: `kingfisher run standalone|coord|node|logstore [flags]` — parses the command line and
// the configuration (flags, KINGFISHER_* environment, --config file: docs/configuration.md) and
// runs the role. The `kingfisher` binary (main.cc) calls it with no hooks; a test build of the
// server (tests/server/crash_hook_main.cc) installs its own.
//
// Returns the exit code: 0 after a graceful shutdown, 1 when the server cannot start, 2 for
// usage and configuration errors.
#pragma once

#include <functional>
#include <string>

namespace kf::server {

// What a test build of the server may observe. Production leaves every hook empty.
struct ServerHooks {
  // Standalone: called on an append's completion thread once it is durable, before its ack is
  // queued to the client (a crash here is the ambiguous failure a retry must survive).
  std::function<void()> after_durable;
  // Standalone: called with a pchannel before its WAL is opened (recovered).
  std::function<void(const std::string& pchannel)> before_wal_open;
};

int Main(int argc, char** argv, const ServerHooks& hooks = {});

}  // namespace kf::server
