// Test helper (header-only; tests link kf_trace): installs a recording tracer provider (always-on
// sampling, synchronous in-memory export) for the lifetime of the object and restores the no-op
// provider afterwards.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trace/in_memory_span_exporter.h"
#include "trace/sampler.h"
#include "trace/sdk_tracer_provider.h"
#include "trace/span_processor.h"
#include "trace/tracer.h"

namespace kf::trace::testing {

class ScopedInMemoryTracing {
 public:
  ScopedInMemoryTracing() : exporter_(std::make_shared<InMemorySpanExporter>()) {
    provider_ =
        std::make_shared<SdkTracerProvider>(Attributes{}, std::make_shared<AlwaysOnSampler>(),
                                            std::make_unique<SimpleSpanProcessor>(exporter_));
    SetTracerProvider(provider_);
  }
  ~ScopedInMemoryTracing() {
    SetTracerProvider(nullptr);
    provider_->Shutdown();
  }
  void Reset() { exporter_->Reset(); }
  std::vector<SpanData> Spans() const { return exporter_->GetFinishedSpans(); }
  std::vector<SpanData> SpansNamed(const std::string& name) const {
    std::vector<SpanData> out;
    for (auto& s : Spans()) {
      if (s.name == name) out.push_back(s);
    }
    return out;
  }

 private:
  std::shared_ptr<InMemorySpanExporter> exporter_;
  std::shared_ptr<SdkTracerProvider> provider_;
};

}  // namespace kf::trace::testing
