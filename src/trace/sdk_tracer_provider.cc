#include "trace/sdk_tracer_provider.h"

#include <utility>

namespace kf::trace {
namespace {

std::shared_ptr<sdk::TracerPipeline> MakePipeline(Attributes attrs,
                                                  std::shared_ptr<const Sampler> sampler,
                                                  std::unique_ptr<SpanProcessor> processor) {
  auto p = std::make_shared<sdk::TracerPipeline>();
  attrs.try_emplace("service.name", std::string("unknown_service"));
  attrs.try_emplace("telemetry.sdk.name", std::string("kingfisher"));
  attrs.try_emplace("telemetry.sdk.language", std::string("cpp"));
  p->resource = std::make_shared<const Resource>(Resource{std::move(attrs)});
  p->sampler = sampler ? std::move(sampler)
                       : std::make_shared<ParentBasedSampler>(std::make_shared<AlwaysOnSampler>());
  p->processor = std::move(processor);
  return p;
}

}  // namespace

SdkTracerProvider::SdkTracerProvider(Attributes resource_attributes,
                                     std::shared_ptr<const Sampler> sampler,
                                     std::unique_ptr<SpanProcessor> processor)
    : pipeline_(
          MakePipeline(std::move(resource_attributes), std::move(sampler), std::move(processor))) {}

SdkTracerProvider::~SdkTracerProvider() { Shutdown(); }

std::shared_ptr<Tracer> SdkTracerProvider::GetTracer(std::string_view scope) {
  absl::MutexLock lock(&mu_);
  auto it = tracers_.find(scope);
  if (it != tracers_.end()) return it->second;
  auto tracer = std::make_shared<Tracer>(std::string(scope), pipeline_);
  tracers_.emplace(std::string(scope), tracer);
  return tracer;
}

bool SdkTracerProvider::ForceFlush(absl::Duration timeout) {
  return pipeline_->processor ? pipeline_->processor->ForceFlush(timeout) : true;
}

void SdkTracerProvider::Shutdown() { Shutdown(absl::Seconds(30)); }

bool SdkTracerProvider::Shutdown(absl::Duration timeout) {
  if (pipeline_->shut_down.exchange(true, std::memory_order_acq_rel)) return true;
  return pipeline_->processor ? pipeline_->processor->Shutdown(timeout) : true;
}

}  // namespace kf::trace
