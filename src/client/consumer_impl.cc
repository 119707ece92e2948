#include "client/consumer_impl.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "client/channel_ready.h"
#include "client/local_scan_stream.h"
#include "common/errors.h"
#include "message/message_trace.h"
#include "message/properties.h"
#include "trace/tracer.h"
#include "wal/scan_request.h"

namespace kf::client {
namespace {

kingfisher::v1::DeliverPolicy ToProto(const kingfisher::DeliverPolicy& p) {
  kingfisher::v1::DeliverPolicy out;
  using K = kingfisher::DeliverPolicy::Kind;
  switch (p.kind) {
    case K::kAll:
      out.set_kind(kingfisher::v1::DeliverPolicy::ALL);
      break;
    case K::kLatest:
      out.set_kind(kingfisher::v1::DeliverPolicy::LATEST);
      break;
    case K::kStartFrom:
      out.set_kind(kingfisher::v1::DeliverPolicy::START_FROM);
      out.set_message_id(p.id.Encode());
      break;
    case K::kStartAfter:
      out.set_kind(kingfisher::v1::DeliverPolicy::START_AFTER);
      out.set_message_id(p.id.Encode());
      break;
  }
  return out;
}

// Copies the delivered message's `_tc` into a Txn's inner messages (docs/tracing.md §5: the
// txn-level trace for the downstream fan-out).
void CopyTraceContextToInner(kingfisher::ConsumedMessage* m) {
  auto tc = m->properties.find(prop::kTraceContext);
  if (tc == m->properties.end()) return;
  for (auto& inner : m->messages) inner.properties[tc->first] = tc->second;
}

}  // namespace

ConsumerImpl::ConsumerImpl(std::shared_ptr<Router> router, LocalWalLookup local,
                           kingfisher::ClientOptions client_options,
                           kingfisher::ConsumerOptions options, std::string pchannel)
    : router_(std::move(router)),
      local_(std::move(local)),
      client_options_(std::move(client_options)),
      options_(std::move(options)),
      pchannel_(std::move(pchannel)),
      backoff_(client_options_.retry) {}

ConsumerImpl::~ConsumerImpl() { Close(); }

kingfisher::v1::ConsumeRequest ConsumerImpl::CreateRequest() const {
  kingfisher::v1::ConsumeRequest req;
  auto* c = req.mutable_create();
  c->set_pchannel(pchannel_);
  if (options_.vchannel != pchannel_) c->set_vchannel(options_.vchannel);
  if (last_delivered_.valid()) {
    *c->mutable_policy() = ToProto(kingfisher::DeliverPolicy::StartFrom(resume_from_));
    c->add_filters()->set_timetick_gt(resume_after_tt_.value());
  } else {
    *c->mutable_policy() = ToProto(options_.policy);
  }
  for (const auto& f : options_.filters) {
    auto* pf = c->add_filters();
    switch (f.kind) {
      case kingfisher::DeliverFilter::Kind::kTimeTickGT:
        pf->set_timetick_gt(f.timetick.value());
        break;
      case kingfisher::DeliverFilter::Kind::kTimeTickGTE:
        pf->set_timetick_gte(f.timetick.value());
        break;
      case kingfisher::DeliverFilter::Kind::kMessageTypes:
        for (auto t : f.types) pf->mutable_message_types()->add_types(static_cast<int32_t>(t));
        break;
    }
  }
  return req;
}

absl::StatusOr<kingfisher::ConsumedMessage> ConsumerImpl::Next(absl::Time deadline) {
  while (true) {
    if (!sticky_.ok()) return sticky_;
    std::shared_ptr<DeliveryStream> stream;
    bool need_stream;
    {
      absl::MutexLock l(&mu_);
      if (closed_) return absl::CancelledError("consumer closed");
      need_stream = stream_ == nullptr;
      if (need_stream) {
        // Wait out the backoff (Close interrupts it). A timed wait may return a little early,
        // so the clock, not the wait's return, says whose time came.
        auto closed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_; };
        const absl::Time until = std::min(reconnect_at_, deadline);
        while (!closed_ && absl::Now() < until) {
          mu_.AwaitWithDeadline(absl::Condition(&closed), until);
        }
        if (closed_) return absl::CancelledError("consumer closed");
        if (absl::Now() < reconnect_at_) {
          return absl::DeadlineExceededError("no message before the deadline (reconnecting)");
        }
      }
    }
    std::optional<Router::Route> route;
    if (need_stream) {
      // Wait for ready (not under mu_, so Close stays prompt): the pchannel assigned to a node
      // (newer than a route that failed), and that node's channel up: a fail-fast stream on a
      // channel that is reconnecting fails at once and leaves the reconnect unpolled
      // (channel_ready.h).
      auto closed = [this] {
        absl::MutexLock l(&mu_);
        return closed_;
      };
      absl::StatusOr<Router::Route> r =
          router_->Resolve(pchannel_, stale_version_, deadline, closed);
      if (!r.ok() && absl::IsInvalidArgument(r.status())) return r.status();  // not in the cluster
      const bool local = r.ok() && local_ && local_(pchannel_, r->term) != nullptr;
      bool moved = false;
      absl::Status ready =
          !r.ok() ? r.status()
          : local ? absl::OkStatus()
                  : AwaitChannelReady(*r->node->channel, deadline, [&] {
                      moved = !router_->IsCurrent(pchannel_, *r);  // a dead node never gets ready
                      return moved || closed();
                    });
      if (moved) continue;  // resolve again: the pchannel is routed elsewhere now
      if (absl::IsCancelled(ready)) return absl::CancelledError("consumer closed");
      if (!ready.ok()) {
        stale_version_ = 0;  // waiting did not help: the next try takes the current route
        return absl::DeadlineExceededError(
            absl::StrCat("no message before the deadline (", ready.message(), ")"));
      }
      route = *std::move(r);
    }
    {
      absl::MutexLock l(&mu_);
      if (closed_) return absl::CancelledError("consumer closed");
      if (stream_ == nullptr) {
        absl::StatusOr<std::shared_ptr<DeliveryStream>> opened = OpenStream(*std::move(route));
        if (!opened.ok()) {
          if (!IsRetryableConsumeError(opened.status())) return opened.status();
          stale_version_ = IsRoutingError(opened.status()) ? stale_version_ : 0;
          continue;
        }
        stream_ = *std::move(opened);
      }
      stream = stream_;
    }
    switch (stream->WaitFor(deadline)) {
      case DeliveryStream::Wait::kMessage: {
        kingfisher::ConsumedMessage m = stream->Pop();
        backoff_.Reset();
        if (m.type != MessageType::kTimeTick && last_delivered_.valid() && m.id.valid() &&
            m.id <= last_delivered_) {
          continue;  // a replay below the resume point: already delivered
        }
        Deliver(&m, stream->remote());
        return m;
      }
      case DeliveryStream::Wait::kCancelled:
        return absl::CancelledError("consumer closed");
      case DeliveryStream::Wait::kDeadline:
        return absl::DeadlineExceededError("no message before the deadline");
      case DeliveryStream::Wait::kEnded: {
        absl::Status s = stream->status();
        {
          absl::MutexLock l(&mu_);
          if (stream_ == stream) stream_.reset();
        }
        stale_version_ = IsRoutingError(s) ? stream->route().version : 0;
        stream.reset();  // drains the call
        if (!IsRetryableConsumeError(s)) {
          sticky_ = s;
          return s;
        }
        reconnect_at_ = absl::Now() + backoff_.Next();
        break;
      }
    }
  }
}

absl::StatusOr<std::shared_ptr<DeliveryStream>> ConsumerImpl::OpenStream(Router::Route route) {
  kingfisher::v1::ConsumeRequest create = CreateRequest();
  if (std::shared_ptr<wal::Wal> wal = local_ ? local_(pchannel_, route.term) : nullptr) {
    absl::StatusOr<wal::ScanOptions> scan = wal::ScanOptionsFromProto(create.create());
    if (!scan.ok()) return scan.status();
    return LocalScanStream::Open(std::move(route), std::move(wal), *scan);
  }
  return std::make_shared<ConsumeStream>(std::move(route), std::move(create),
                                         options_.buffer_messages);
}

void ConsumerImpl::Deliver(kingfisher::ConsumedMessage* m, bool remote) {
  const bool persisted_tick =
      m->type != MessageType::kTimeTick || !m->properties.contains(prop::kNotPersisted);
  if (m->id.valid() && persisted_tick && m->id > last_delivered_) {
    last_delivered_ = m->id;
    // The LCMID is at or below the id; anything else (absent, garbled) resumes at the id.
    resume_from_ =
        m->last_confirmed.valid() && m->last_confirmed <= m->id ? m->last_confirmed : m->id;
    resume_after_tt_ = m->timetick;
  }
  if (m->type == MessageType::kTimeTick) return;  // never traced (docs/tracing.md §7 invariant 12)

  // One wal.dist_consume per delivered message, child of the message-carried context. The
  // span and `_tc` need the properties only: they are moved in and back, the payload stays.
  MutableMessage msg;
  msg.SetProperties(std::move(m->properties));
  trace::Context parent = ExtractTraceContext(trace::Context(), msg);
  if (!remote) {  // no network hop, no wal.dist_consume: the message's own context
    m->properties = msg.TakeProperties();
    m->trace = std::move(parent);
    return;
  }
  auto [ctx, span] =
      StartSpanForMessage(parent, &msg, "wal.dist_consume", trace::SpanKind::kConsumer);
  OverwriteTraceContext(ctx, &msg);
  m->properties = msg.TakeProperties();
  CopyTraceContextToInner(m);
  span->End();
  m->trace = std::move(ctx);
}

void ConsumerImpl::Close() {
  std::shared_ptr<DeliveryStream> stream;
  {
    absl::MutexLock l(&mu_);
    closed_ = true;
    stream = stream_;
  }
  if (stream) stream->Cancel();
}

}  // namespace kf::client
