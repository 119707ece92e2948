// InitTracingFromEnv: configures the global tracer provider from the standard OTEL_* variables.
//
//   OTEL_SDK_DISABLED=true            nothing installed
//   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT  used as is;  else OTEL_EXPORTER_OTLP_ENDPOINT +
//   "/v1/traces" OTEL_SERVICE_NAME                 service.name (default: the caller's default
//   name);
//                                     OTEL_RESOURCE_ATTRIBUTES (k=v,k=v) adds resource attributes
//   OTEL_TRACES_SAMPLER[_ARG]         always_on, always_off, traceidratio, parentbased_always_on
//                                     (default), parentbased_always_off, parentbased_traceidratio
//   OTEL_BSP_*                        batch processor (batch_span_processor.h)
//   OTEL_EXPORTER_OTLP[_TRACES]_TIMEOUT / _HEADERS   exporter (ms / k=v,k=v)
// Only when an endpoint is set does it install an SdkTracerProvider with BatchSpanProcessor and
// OtlpHttpExporter; otherwise the default no-op provider stays (ids still propagate).
//
// Thread-safety: call once at process start. Ownership: the handle owns what it installed;
// destroying it (or Shutdown) force-flushes and shuts that provider down, and restores the no-op
// provider if it is still the global one. Errors: bad values are logged and defaulted.
#pragma once

#include <memory>
#include <string_view>

#include "absl/time/time.h"
#include "trace/tracer.h"

namespace kf::trace {

class TracingHandle {
 public:
  TracingHandle() = default;
  explicit TracingHandle(std::shared_ptr<TracerProvider> installed);
  TracingHandle(TracingHandle&& other) noexcept;
  TracingHandle& operator=(TracingHandle&& other) noexcept;
  TracingHandle(const TracingHandle&) = delete;
  TracingHandle& operator=(const TracingHandle&) = delete;
  ~TracingHandle();

  // True when an exporting provider was installed.
  bool exporting() const { return installed_ != nullptr; }
  // ForceFlush(timeout) then Shutdown of the installed provider; idempotent.
  void Shutdown(absl::Duration timeout = absl::Seconds(30));

 private:
  std::shared_ptr<TracerProvider> installed_;
};

TracingHandle InitTracingFromEnv(std::string_view default_service_name);

}  // namespace kf::trace
