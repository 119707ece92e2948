// Client::Impl: the state a Client shares with the files that implement its calls (client.cc,
// collection_calls.cc): the options, the router with the endpoint's channel, and the
// in-process fast path.
//
// Thread-safety: immutable after construction (the router is thread-safe).
// Ownership: shares the router with the producers and consumers the client created.
// Errors: none (a holder of state; Client::Connect validates the options).
#pragma once

#include <memory>
#include <utility>

#include "client/local_transport.h"
#include "client/router.h"
#include "kingfisher/client.h"

namespace kingfisher {

class Client::Impl {
 public:
  Impl(ClientOptions options, std::shared_ptr<kf::client::Router> router,
       kf::client::LocalTransport local)
      : options_(std::move(options)), router_(std::move(router)), local_(std::move(local)) {}

  ClientOptions options_;
  std::shared_ptr<kf::client::Router> router_;  // shared with producers and consumers
  kf::client::LocalTransport local_;            // the in-process fast path, if any
};

}  // namespace kingfisher
