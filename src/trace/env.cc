#include "trace/env.h"

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/absl_compat.h"
#include "spdlog/spdlog.h"
#include "trace/batch_span_processor.h"
#include "trace/otlp_http_exporter.h"
#include "trace/sampler.h"
#include "trace/sdk_tracer_provider.h"

namespace kf::trace {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(absl::StripAsciiWhitespace(v));
}

// "k=v,k2=v2" (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS); malformed pairs skipped.
std::vector<std::pair<std::string, std::string>> ParsePairs(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    std::string key(absl::StripAsciiWhitespace(kv.first));
    if (key.empty() || item.find('=') == absl::string_view::npos) continue;
    out.emplace_back(std::move(key), std::string(absl::StripAsciiWhitespace(kv.second)));
  }
  return out;
}

double SamplerArg(double fallback) {
  std::string arg = Env("OTEL_TRACES_SAMPLER_ARG");
  double r;
  if (arg.empty()) return fallback;
  if (!absl::SimpleAtod(arg, &r) || r < 0 || r > 1) {
    spdlog::warn("tracing: ignoring OTEL_TRACES_SAMPLER_ARG={}: not a ratio in [0, 1]", arg);
    return fallback;
  }
  return r;
}

std::shared_ptr<const Sampler> SamplerFromEnv() {
  std::string name = absl::AsciiStrToLower(Env("OTEL_TRACES_SAMPLER"));
  auto on = std::make_shared<AlwaysOnSampler>();
  auto off = std::make_shared<AlwaysOffSampler>();
  if (name == "always_on") return on;
  if (name == "always_off") return off;
  if (name == "traceidratio") return std::make_shared<TraceIdRatioSampler>(SamplerArg(1.0));
  if (name == "parentbased_always_off") return std::make_shared<ParentBasedSampler>(off);
  if (name == "parentbased_traceidratio") {
    return std::make_shared<ParentBasedSampler>(
        std::make_shared<TraceIdRatioSampler>(SamplerArg(1.0)));
  }
  if (!name.empty() && name != "parentbased_always_on") {
    spdlog::warn("tracing: unknown OTEL_TRACES_SAMPLER={}, using parentbased_always_on", name);
  }
  return std::make_shared<ParentBasedSampler>(on);
}

std::optional<absl::Duration> TimeoutFromEnv() {
  for (const char* name : {"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"}) {
    std::string v = Env(name);
    uint64_t ms;
    if (v.empty()) continue;
    if (absl::SimpleAtoi(v, &ms)) return absl::Milliseconds(ms);
    spdlog::warn("tracing: ignoring {}={}: not milliseconds", name, v);
  }
  return std::nullopt;
}

}  // namespace

TracingHandle::TracingHandle(std::shared_ptr<TracerProvider> installed)
    : installed_(std::move(installed)) {}

TracingHandle::TracingHandle(TracingHandle&& other) noexcept
    : installed_(std::move(other.installed_)) {}

TracingHandle& TracingHandle::operator=(TracingHandle&& other) noexcept {
  if (this != &other) {
    Shutdown();
    installed_ = std::move(other.installed_);
  }
  return *this;
}

TracingHandle::~TracingHandle() { Shutdown(); }

void TracingHandle::Shutdown(absl::Duration timeout) {
  if (installed_ == nullptr) return;
  std::shared_ptr<TracerProvider> p = std::move(installed_);
  installed_ = nullptr;
  // Later spans should be plain no-ops rather than hit a shut-down provider.
  if (GetTracerProvider() == p) SetTracerProvider(nullptr);
  if (!p->ForceFlush(timeout)) spdlog::warn("tracing: flush timed out at shutdown");
  p->Shutdown();
}

TracingHandle InitTracingFromEnv(std::string_view default_service_name) {
  if (absl::AsciiStrToLower(Env("OTEL_SDK_DISABLED")) == "true") return TracingHandle();
  std::string endpoint = Env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  if (endpoint.empty()) {
    std::string base = Env("OTEL_EXPORTER_OTLP_ENDPOINT");
    if (base.empty()) return TracingHandle();  // ids still propagate via the no-op provider
    absl::string_view trimmed = base;
    absl::ConsumeSuffix(&trimmed, "/");
    endpoint = std::string(trimmed) + "/v1/traces";
  }

  Attributes resource;
  for (auto& [k, v] : ParsePairs(Env("OTEL_RESOURCE_ATTRIBUTES"))) resource[k] = std::move(v);
  std::string service = Env("OTEL_SERVICE_NAME");
  if (!service.empty()) {
    resource["service.name"] = service;
  } else if (!resource.contains("service.name")) {
    resource["service.name"] = std::string(default_service_name);
  }

  OtlpHttpExporterOptions exporter_options;
  exporter_options.endpoint = endpoint;
  if (auto t = TimeoutFromEnv()) exporter_options.timeout = *t;
  std::string headers = Env("OTEL_EXPORTER_OTLP_TRACES_HEADERS");
  if (headers.empty()) headers = Env("OTEL_EXPORTER_OTLP_HEADERS");
  exporter_options.headers = ParsePairs(headers);

  auto provider = std::make_shared<SdkTracerProvider>(
      std::move(resource), SamplerFromEnv(),
      std::make_unique<BatchSpanProcessor>(
          std::make_shared<OtlpHttpExporter>(std::move(exporter_options)),
          BatchSpanProcessorOptions::FromEnv()));
  SetTracerProvider(provider);
  spdlog::info("tracing: exporting spans to {}", endpoint);
  return TracingHandle(provider);
}

}  // namespace kf::trace
