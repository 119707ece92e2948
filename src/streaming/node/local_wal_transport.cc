#include "streaming/node/local_wal_transport.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>

#include "client/client_internal.h"
#include "message/validate.h"
#include "wal/scan_request.h"
#include "wal/txn/txn_message.h"

namespace kf::streaming::node {
namespace {

// A delivered message as the client hands it out (a Txn with its inner messages).
kingfisher::ConsumedMessage ToConsumed(const ImmutableMessage& m) {
  kingfisher::ConsumedMessage out;
  out.id = m.id();
  out.type = m.type();
  out.timetick = m.timetick();
  out.last_confirmed = m.last_confirmed();
  out.vchannel = std::string(m.vchannel());
  out.properties = m.message().properties();
  out.payload = m.message().payload();
  if (const wal::TxnMessage* txn = wal::AsTxnMessage(m)) {
    for (const ImmutableMessagePtr& inner : txn->inner()) {
      out.messages.push_back(ToConsumed(*inner));
    }
  }
  return out;
}

// A Scanner of a Wal in this process, delivered as a DeliveryStream. Ends with the scanner's
// error (a Wal closed because the pchannel moved), after which the consumer re-resolves as
// after a remote stream broke.
class LocalScanStream final : public client::DeliveryStream {
 public:
  LocalScanStream(client::Router::Route route, std::shared_ptr<wal::Wal> wal,
                  std::unique_ptr<wal::Scanner> scanner)
      : route_(std::move(route)), wal_(std::move(wal)), scanner_(std::move(scanner)) {}

  Wait WaitFor(absl::Time deadline) override {
    // The scanner has no cancellation of its own: wait in short slices so Cancel is prompt.
    constexpr absl::Duration kSlice = absl::Milliseconds(100);
    const trace::Context ctx;
    for (;;) {
      if (next_.has_value()) return Wait::kMessage;
      if (cancelled_.load(std::memory_order_acquire)) return Wait::kCancelled;
      if (ended_) return Wait::kEnded;
      const absl::Time now = absl::Now();
      if (now >= deadline) return Wait::kDeadline;
      absl::StatusOr<ImmutableMessagePtr> m = scanner_->Next(ctx, std::min(deadline, now + kSlice));
      if (m.ok()) {
        if (*m != nullptr) next_ = ToConsumed(**m);
      } else if (!absl::IsDeadlineExceeded(m.status())) {
        ended_ = true;
        status_ = m.status();
      }
    }
  }
  kingfisher::ConsumedMessage Pop() override {
    kingfisher::ConsumedMessage m = std::move(*next_);
    next_.reset();
    return m;
  }
  absl::Status status() const override { return status_; }
  void Cancel() override { cancelled_.store(true, std::memory_order_release); }
  const client::Router::Route& route() const override { return route_; }
  bool remote() const override { return false; }

 private:
  const client::Router::Route route_;
  const std::shared_ptr<wal::Wal> wal_;  // outlives the scanner
  const std::unique_ptr<wal::Scanner> scanner_;
  std::atomic<bool> cancelled_{false};
  std::optional<kingfisher::ConsumedMessage> next_;
  bool ended_ = false;
  absl::Status status_;
};

class WalPChannel final : public client::LocalPChannel {
 public:
  explicit WalPChannel(std::shared_ptr<wal::Wal> wal) : wal_(std::move(wal)) {}

  void Append(const trace::Context& ctx, MutableMessage msg, client::AppendDone done) override {
    // What the node's Produce handler checks, with the default limits.
    if (absl::Status valid = ValidateProducedMessage(msg, ValidationOptions{}); !valid.ok()) {
      return std::move(done)(valid);
    }
    // wal.append hangs directly under the caller's span: no hop, no wal.dist_append.
    wal_->Append(
        ctx, std::move(msg), [done = std::move(done)](absl::StatusOr<wal::AppendResult> r) mutable {
          if (!r.ok()) return std::move(done)(r.status());
          kingfisher::AppendResult out{r->id, r->timetick, r->last_confirmed, std::nullopt};
          if (r->txn && r->txn->txn_id() != 0) out.txn_id = TxnId(r->txn->txn_id());
          std::move(done)(std::move(out));
        });
  }

  absl::StatusOr<std::unique_ptr<client::DeliveryStream>> Read(
      client::Router::Route route, const kingfisher::v1::ConsumeRequest::Create& create) override {
    absl::StatusOr<wal::ScanOptions> scan = wal::ScanOptionsFromProto(create);
    if (!scan.ok()) return scan.status();
    absl::StatusOr<std::unique_ptr<wal::Scanner>> scanner = wal_->Read(*scan);
    if (!scanner.ok()) return scanner.status();
    return std::make_unique<LocalScanStream>(std::move(route), wal_, *std::move(scanner));
  }

 private:
  const std::shared_ptr<wal::Wal> wal_;
};

}  // namespace

client::LocalTransport LocalWalTransport(LocalWalLookup lookup) {
  return [lookup = std::move(lookup)](const std::string& pchannel,
                                      int64_t term) -> std::shared_ptr<client::LocalPChannel> {
    std::shared_ptr<wal::Wal> wal = lookup(pchannel, term);
    if (wal == nullptr) return nullptr;
    return std::make_shared<WalPChannel>(std::move(wal));
  };
}

absl::StatusOr<std::unique_ptr<kingfisher::Client>> ConnectInProcess(
    kingfisher::ClientOptions options, LocalWalLookup lookup) {
  return client::ConnectWith(std::move(options), LocalWalTransport(std::move(lookup)));
}

}  // namespace kf::streaming::node
