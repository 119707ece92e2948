// Client::Impl: the state a Client shares with the files that implement its calls (client.cc,
// collection_calls.cc): the options, the router with the endpoint's channel, and the
// in-process fast path.
//
// Thread-safety: immutable after construction but for the collection cache, which has its own
// lock (the router is thread-safe).
// Ownership: shares the router with the producers and consumers the client created.
// Errors: none (a holder of state; Client::Connect validates the options).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "client/local_transport.h"
#include "client/router.h"
#include "client/session_clock.h"
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

  // Descriptions of the collections searched through this client (search_calls.cc): a search
  // needs the vchannels and the dim, which change only when the collection is dropped (and a
  // new one created under the name), so it asks the endpoint once and again only after a
  // shard said the collection is not there.
  mutable absl::Mutex collections_mu_;
  mutable std::map<std::string, CollectionInfo> collections_ ABSL_GUARDED_BY(collections_mu_);
  // What this client's producers had acknowledged, for session reads.
  std::shared_ptr<kf::client::SessionClock> session_ = std::make_shared<kf::client::SessionClock>();
};

}  // namespace kingfisher
