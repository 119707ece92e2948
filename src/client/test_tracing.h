// Test helper: installs a recording tracer provider (always-on sampling, synchronous in-memory
// export) for the lifetime of the object and restores the no-op provider afterwards.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trace/in_memory_span_exporter.h"
#include "trace/sampler.h"
#include "trace/sdk_tracer_provider.h"
#include "trace/span_processor.h"
#include "trace/tracer.h"

namespace kf::client::testing {

class ScopedInMemoryTracing {
 public:
  ScopedInMemoryTracing() : exporter_(std::make_shared<trace::InMemorySpanExporter>()) {
    provider_ = std::make_shared<trace::SdkTracerProvider>(
        trace::Attributes{}, std::make_shared<trace::AlwaysOnSampler>(),
        std::make_unique<trace::SimpleSpanProcessor>(exporter_));
    trace::SetTracerProvider(provider_);
  }
  ~ScopedInMemoryTracing() {
    trace::SetTracerProvider(nullptr);
    provider_->Shutdown();
  }
  std::vector<trace::SpanData> Spans() const { return exporter_->GetFinishedSpans(); }
  std::vector<trace::SpanData> SpansNamed(const std::string& name) const {
    std::vector<trace::SpanData> out;
    for (auto& s : Spans()) {
      if (s.name == name) out.push_back(s);
    }
    return out;
  }

 private:
  std::shared_ptr<trace::InMemorySpanExporter> exporter_;
  std::shared_ptr<trace::SdkTracerProvider> provider_;
};

}  // namespace kf::client::testing
