// LocalScanStream: the in-process fast path of a Consumer (in_process.h): a Scanner of a Wal
// in this process, delivered as a DeliveryStream.
//
// Thread-safety: as DeliveryStream. Ownership: shares the Wal, owns the scanner.
// Errors: the scanner's (a Wal closed because the pchannel moved ends the stream with its
// error, and the consumer re-resolves as after a remote stream broke).
#pragma once

#include <atomic>
#include <memory>
#include <optional>

#include "client/delivery_stream.h"
#include "wal/wal.h"

namespace kf::client {

class LocalScanStream final : public DeliveryStream {
 public:
  // Opens the scanner; errors as Wal::Read.
  static absl::StatusOr<std::unique_ptr<LocalScanStream>> Open(Router::Route route,
                                                               std::shared_ptr<wal::Wal> wal,
                                                               const wal::ScanOptions& options);

  Wait WaitFor(absl::Time deadline) override;
  kingfisher::ConsumedMessage Pop() override;
  absl::Status status() const override { return status_; }
  void Cancel() override { cancelled_.store(true, std::memory_order_release); }
  const Router::Route& route() const override { return route_; }
  bool remote() const override { return false; }

 private:
  LocalScanStream(Router::Route route, std::shared_ptr<wal::Wal> wal,
                  std::unique_ptr<wal::Scanner> scanner);

  const Router::Route route_;
  const std::shared_ptr<wal::Wal> wal_;
  const std::unique_ptr<wal::Scanner> scanner_;
  std::atomic<bool> cancelled_{false};
  std::optional<kingfisher::ConsumedMessage> next_;
  bool ended_ = false;
  absl::Status status_;
};

// A delivered message as the client hands it out (a Txn with its inner messages).
kingfisher::ConsumedMessage ToConsumed(const ImmutableMessage& m);

}  // namespace kf::client
