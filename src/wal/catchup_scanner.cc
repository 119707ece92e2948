#include "wal/catchup_scanner.h"

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "message/message_trace.h"

namespace kf::wal {
namespace {

class CatchupScanner final : public Scanner {
 public:
  CatchupScanner(std::unique_ptr<BackendScanner> backend, std::string vchannel, bool traced)
      : backend_(std::move(backend)), vchannel_(std::move(vchannel)), traced_(traced) {}

  absl::StatusOr<ImmutableMessagePtr> Next(const trace::Context& ctx,
                                           absl::Time deadline) override {
    for (;;) {
      auto entry = backend_->Next(deadline);
      if (!entry.ok()) return entry.status();
      auto msg = MutableMessage::Decode(entry->data);
      if (!msg.ok()) {
        return StreamingError(StreamingCode::kDataLoss,
                              absl::StrCat("entry ", entry->id.ToText(),
                                           " does not decode: ", msg.status().message()));
      }
      std::string_view vc = msg->vchannel();
      if (!vchannel_.empty() && !vc.empty() && vc != vchannel_) continue;
      if (traced_) MarkConsumed(ctx, &*msg);
      return std::make_shared<const ImmutableMessage>(entry->id, std::move(*msg));
    }
  }

 private:
  // A non-txn message or a CommitTxn resumes its trace here; Begin and bodies do not (the
  // assembled transaction gets one span at its commit). TimeTicks are never traced.
  static void MarkConsumed(const trace::Context& ctx, MutableMessage* msg) {
    MessageType t = msg->type();
    if (t == MessageType::kTimeTick) return;
    if (msg->txn().has_value() && t != MessageType::kCommitTxn) return;
    trace::Context parent = ExtractTraceContext(ctx, *msg);
    auto [span_ctx, span] =
        StartSpanForMessage(parent, msg, "wal.catchup_consume", trace::SpanKind::kConsumer);
    OverwriteTraceContext(span_ctx, msg);
    span->End();
  }

  std::unique_ptr<BackendScanner> backend_;
  const std::string vchannel_;
  const bool traced_;
};

}  // namespace

std::unique_ptr<Scanner> NewCatchupScanner(std::unique_ptr<BackendScanner> backend,
                                           std::string vchannel, bool traced) {
  return std::make_unique<CatchupScanner>(std::move(backend), std::move(vchannel), traced);
}

}  // namespace kf::wal
