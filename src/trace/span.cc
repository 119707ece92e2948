#include "trace/span.h"

#include <memory>
#include <new>
#include <string>

#include "absl/status/status.h"

namespace kf::trace {

Span::~Span() = default;

void Span::RecordError(const absl::Status& s) noexcept {
  if (s.ok() || !IsRecording()) return;
  try {
    std::string message(s.message());
    AddEvent("exception", {{"exception.type", absl::StatusCodeToString(s.code())},
                           {"exception.message", message}});
    SetStatus(SpanStatusCode::kError, message);
  } catch (...) {
    // Out of memory while tracing: tracing never fails the traced operation.
  }
}

namespace {

// Storage for kSpans NonRecordingSpans, constructed one by one by the thread that owns the
// block while it is that thread's current block; destroyed with the block.
class NonRecordingSpanBlock {
 public:
  static constexpr size_t kSpans = 128;

  NonRecordingSpanBlock() = default;
  NonRecordingSpanBlock(const NonRecordingSpanBlock&) = delete;
  NonRecordingSpanBlock& operator=(const NonRecordingSpanBlock&) = delete;
  ~NonRecordingSpanBlock() {
    for (size_t i = 0; i < used_; ++i) Slot(i)->~NonRecordingSpan();
  }

  bool full() const { return used_ == kSpans; }
  // REQUIRES: !full()
  NonRecordingSpan* Emplace(const SpanContext& sc) {
    auto* span = new (storage_ + used_ * sizeof(NonRecordingSpan)) NonRecordingSpan(sc);
    ++used_;
    return span;
  }

 private:
  NonRecordingSpan* Slot(size_t i) {
    return std::launder(
        reinterpret_cast<NonRecordingSpan*>(storage_ + i * sizeof(NonRecordingSpan)));
  }

  alignas(NonRecordingSpan) unsigned char storage_[kSpans * sizeof(NonRecordingSpan)];
  size_t used_ = 0;
};

}  // namespace

std::shared_ptr<Span> MakeNonRecordingSpan(const SpanContext& sc) {
  thread_local std::shared_ptr<NonRecordingSpanBlock> block;
  if (block == nullptr || block->full()) block = std::make_shared<NonRecordingSpanBlock>();
  NonRecordingSpan* span = block->Emplace(sc);
  return std::shared_ptr<Span>(block, span);
}

}  // namespace kf::trace
