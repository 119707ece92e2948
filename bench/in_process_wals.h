// InProcessWals: the fast path's side of cluster_bench — one WAL per pchannel on the local
// backend in this process, opened as `kingfisher run standalone` opens them (a file TSO, the
// local opener, OpenWal at one term), and a Client whose appends reach them directly through
// the in-process fast path (streaming/node/local_wal_transport.h), with no gRPC hop.
//
// The client's router still needs an endpoint: a loopback gRPC server whose StreamingCoord
// answers UNIMPLEMENTED puts it in static mode (every pchannel at term 0), and the local
// lookup claims every pchannel, so nothing but that one discovery call goes over the network.
//
// Thread-safety: client() is thread-safe. Ownership: owns the WALs, the server and the client.
// Errors: the constructor ends the process (kf::bench::Die) when something does not open.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/server.h"
#include "kingfisher/client.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "storage/tso/timestamp_allocator.h"
#include "wal/backend.h"
#include "wal/wal.h"

namespace kf::bench {

class InProcessWals {
 public:
  // WALs under `dir`/wal, the TSO file in `dir`.
  InProcessWals(const std::string& dir, const std::vector<std::string>& pchannels);
  ~InProcessWals();
  InProcessWals(const InProcessWals&) = delete;
  InProcessWals& operator=(const InProcessWals&) = delete;

  kingfisher::Client& client() { return *client_; }

 private:
  std::unique_ptr<TimestampAllocator> tso_;
  std::unique_ptr<wal::WalOpener> opener_;
  std::map<std::string, std::shared_ptr<wal::Wal>> wals_;  // by pchannel; read-only once built
  kingfisher::v1::StreamingCoord::Service no_discovery_;   // every method UNIMPLEMENTED
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<kingfisher::Client> client_;
};

}  // namespace kf::bench
