// The Span interface (OTel-shaped) plus the attribute value type and the non-recording span
// that carries a context without recording anything.
//
// Thread-safety: every Span method is thread-safe and noexcept; calls after End() are no-ops.
// Ownership: spans are shared (std::shared_ptr) between the Context that makes them current and
// the code that ends them.
// Errors: none surface; tracing never fails the traced operation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "trace/span_context.h"

namespace kf::trace {

enum class SpanKind { kInternal = 1, kServer = 2, kClient = 3, kProducer = 4, kConsumer = 5 };
enum class SpanStatusCode { kUnset = 0, kOk = 1, kError = 2 };

using AttributeValue = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;
using AttributeList = std::vector<std::pair<std::string, AttributeValue>>;

class Span {
 public:
  virtual ~Span();

  virtual SpanContext context() const noexcept = 0;
  // False for spans that record nothing (no-op provider, sampled out, TimeTick messages).
  virtual bool IsRecording() const noexcept = 0;
  virtual void SetAttribute(std::string_view key, AttributeValue v) noexcept = 0;
  virtual void AddEvent(std::string_view name, AttributeList attrs = {}) noexcept = 0;
  // OTel rules: kUnset is ignored, kOk is final, the description is kept only for kError.
  virtual void SetStatus(SpanStatusCode code, std::string_view description = {}) noexcept = 0;
  // Event "exception" with exception.message (and exception.type = the status code name),
  // then status ERROR with the message. No-op for an OK status.
  void RecordError(const absl::Status& s) noexcept;
  virtual void End() noexcept = 0;
};

// Carries a span context and records nothing: the span of the no-op provider, of sampled-out
// spans and of remote parents (Context::WithRemoteParent).
class NonRecordingSpan final : public Span {
 public:
  explicit NonRecordingSpan(const SpanContext& sc) noexcept : context_(sc) {}
  SpanContext context() const noexcept override { return context_; }
  bool IsRecording() const noexcept override { return false; }
  void SetAttribute(std::string_view, AttributeValue) noexcept override {}
  void AddEvent(std::string_view, AttributeList) noexcept override {}
  void SetStatus(SpanStatusCode, std::string_view) noexcept override {}
  void End() noexcept override {}

 private:
  const SpanContext context_;
};

// A NonRecordingSpan for `sc`. Non-recording spans are started for every traced operation
// while tracing is off (two per WAL append), so they are carved from per-thread blocks of 128:
// one allocation per block instead of one per span. The result shares the block's reference
// count (an aliasing shared_ptr), so a block is freed when its last span is released, on any
// thread; a span kept for long keeps its whole block (~5 KiB) alive. Throws std::bad_alloc.
std::shared_ptr<Span> MakeNonRecordingSpan(const SpanContext& sc);

}  // namespace kf::trace
