// Registry: the metric families of a process (or of a test) and their rendering in the
// Prometheus text exposition format 0.0.4 (exposition.h), served at GET /metrics.
//
//   Registry& r = DefaultRegistry();
//   Counter* ok = r.GetCounter("kf_rpc_produce_total", "Produce requests answered, by code",
//                              {"code"}).With({"OK"});
//   ok->Inc();
//   CallbackHandle h = r.AddGaugeCallback("kf_wal_size_bytes", "...", {"pchannel"},
//       [&](GaugeEmitter& e) { for (...) e.Emit({pchannel}, bytes); });
//   std::string text = r.Render();
//
// Get* is get-or-create: every Wal of a process asks for "kf_wal_appends_total" and gets the
// same family. Asking again with another type, other label names or other buckets is a
// programming error and aborts (so does an invalid name). Families are sorted by name in the
// output, children by label values.
//
// Callback gauges are for values someone else owns (a WAL's size on disk, the assignment
// table): the callback runs at scrape time and emits one value per label set. Several
// callbacks may share a name (each owner registers its own; they must emit disjoint label
// sets: of duplicates the first is kept). A name is either a callback gauge or a Get* family.
//
// Thread-safety: everything is thread-safe. Callbacks run inside Render with the registry's
// lock held: they must not call into this Registry, and a CallbackHandle must not be destroyed
// while holding a lock its callback takes (destruction waits for a running scrape, which is
// what makes it safe for the callback to use the state it was registered with until then).
// Ownership: the Registry owns its families; references to families and children stay valid
// for the Registry's lifetime. A CallbackHandle borrows its Registry, which must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics/family.h"

namespace kf::metrics {

// Receives a callback gauge's samples during a scrape.
class GaugeEmitter {
 public:
  virtual ~GaugeEmitter() = default;
  // REQUIRES: as many values as the family has label names (else the process aborts).
  virtual void Emit(std::vector<std::string> label_values, double value) = 0;
};
using GaugeCallback = std::function<void(GaugeEmitter&)>;

class Registry;

// Unregisters its callback when destroyed or Reset (waiting for a scrape that runs it).
class CallbackHandle {
 public:
  CallbackHandle() = default;
  CallbackHandle(CallbackHandle&& other) noexcept { *this = std::move(other); }
  CallbackHandle& operator=(CallbackHandle&& other) noexcept;
  ~CallbackHandle() { Reset(); }

  void Reset();

 private:
  friend class Registry;
  CallbackHandle(Registry* registry, std::string name, uint64_t id)
      : registry_(registry), name_(std::move(name)), id_(id) {}

  Registry* registry_ = nullptr;
  std::string name_;
  uint64_t id_ = 0;
};

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  CounterFamily& GetCounter(std::string_view name, std::string_view help,
                            std::vector<std::string> label_names = {});
  GaugeFamily& GetGauge(std::string_view name, std::string_view help,
                        std::vector<std::string> label_names = {});
  // `bounds`: inclusive upper bounds, finite, strictly increasing (see histogram.h).
  HistogramFamily& GetHistogram(std::string_view name, std::string_view help,
                                std::vector<std::string> label_names, std::vector<double> bounds);

  [[nodiscard]] CallbackHandle AddGaugeCallback(std::string_view name, std::string_view help,
                                                std::vector<std::string> label_names,
                                                GaugeCallback callback);

  // The text exposition of every family (Content-Type: kTextContentType).
  std::string Render() const;

 private:
  friend class CallbackHandle;
  class CallbackFamily;

  template <typename F>
  F& GetOrCreate(std::string_view name, std::string_view help, std::vector<std::string> labels,
                 std::vector<double> bounds);
  void RemoveCallback(const std::string& name, uint64_t id);

  mutable absl::Mutex mu_;
  // std::map: sorted by name, which is the rendering order.
  std::map<std::string, std::unique_ptr<FamilyBase>, std::less<>> families_ ABSL_GUARDED_BY(mu_);
  uint64_t next_callback_id_ ABSL_GUARDED_BY(mu_) = 1;
};

// The process-wide registry (never destroyed), like a Prometheus client's default registry:
// what the server's /metrics renders and what components use unless given another one.
Registry& DefaultRegistry();

}  // namespace kf::metrics
