#include "trace/recording_span.h"

#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace kf::trace {

uint64_t NowUnixNanos() noexcept { return static_cast<uint64_t>(absl::GetCurrentTimeNanos()); }

RecordingSpan::RecordingSpan(SpanData data,
                             std::shared_ptr<const sdk::TracerPipeline> pipeline) noexcept
    : context_(data.context), pipeline_(std::move(pipeline)), data_(std::move(data)) {}

RecordingSpan::~RecordingSpan() { End(); }

bool RecordingSpan::IsRecording() const noexcept {
  absl::MutexLock lock(&mu_);
  return !ended_;
}

void RecordingSpan::SetAttribute(std::string_view key, AttributeValue v) noexcept {
  try {
    absl::MutexLock lock(&mu_);
    if (ended_) return;
    auto it = data_.attributes.find(std::string(key));
    if (it != data_.attributes.end()) {
      it->second = std::move(v);
    } else if (data_.attributes.size() < kMaxSpanAttributes) {
      data_.attributes.emplace(std::string(key), std::move(v));
    } else {
      ++data_.dropped_attributes_count;
    }
  } catch (...) {
    // Allocation failure: drop the attribute rather than fail the traced operation.
  }
}

void RecordingSpan::AddEvent(std::string_view name, AttributeList attrs) noexcept {
  try {
    SpanEvent event;
    event.name = std::string(name);
    event.time_unix_nanos = NowUnixNanos();
    for (auto& [k, v] : attrs) event.attributes.insert_or_assign(std::move(k), std::move(v));
    absl::MutexLock lock(&mu_);
    if (ended_) return;
    if (data_.events.size() < kMaxSpanEvents) {
      data_.events.push_back(std::move(event));
    } else {
      ++data_.dropped_events_count;
    }
  } catch (...) {
  }
}

void RecordingSpan::SetStatus(SpanStatusCode code, std::string_view description) noexcept {
  try {
    absl::MutexLock lock(&mu_);
    // OTel: Unset never overrides, Ok is final, a description only accompanies Error.
    if (ended_ || code == SpanStatusCode::kUnset || data_.status == SpanStatusCode::kOk) return;
    data_.status = code;
    data_.status_description = code == SpanStatusCode::kError ? std::string(description) : "";
  } catch (...) {
  }
}

void RecordingSpan::End() noexcept {
  SpanData done;
  {
    absl::MutexLock lock(&mu_);
    if (ended_) return;
    ended_ = true;
    data_.end_unix_nanos = NowUnixNanos();
    done = std::move(data_);
  }
  // Outside the lock: the processor may export synchronously.
  if (pipeline_ && pipeline_->processor) pipeline_->processor->OnEnd(std::move(done));
}

}  // namespace kf::trace
