// SdkTracerProvider: the recording provider (resource + sampler + one span processor).
//
// Thread-safety: all methods are thread-safe. Ownership: owns the processor; tracers it hands
// out share its pipeline, so spans ended after the provider is gone are still handled safely.
// Errors: none surface; after Shutdown new spans are non-recording.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "trace/sampler.h"
#include "trace/span_data.h"
#include "trace/span_processor.h"
#include "trace/tracer.h"

namespace kf::trace {
namespace sdk {

// What every tracer of one provider shares.
struct TracerPipeline {
  std::shared_ptr<const Resource> resource;
  std::shared_ptr<const Sampler> sampler;
  std::unique_ptr<SpanProcessor> processor;
  std::atomic<bool> shut_down{false};
};

}  // namespace sdk

class SdkTracerProvider final : public TracerProvider {
 public:
  // `resource_attributes` gets service.name = "unknown_service" when it has none, plus
  // telemetry.sdk.{name,language}. A null sampler means ParentBased(AlwaysOn).
  SdkTracerProvider(Attributes resource_attributes, std::shared_ptr<const Sampler> sampler,
                    std::unique_ptr<SpanProcessor> processor);
  ~SdkTracerProvider() override;  // Shutdown()

  std::shared_ptr<Tracer> GetTracer(std::string_view scope) override;
  bool ForceFlush(absl::Duration timeout) override;
  void Shutdown() override;  // Shutdown(30 s)
  bool Shutdown(absl::Duration timeout);

  const Resource& resource() const { return *pipeline_->resource; }

 private:
  const std::shared_ptr<sdk::TracerPipeline> pipeline_;
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Tracer>, std::less<>> tracers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::trace
