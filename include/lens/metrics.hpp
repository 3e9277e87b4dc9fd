// Metrics on top of opentelemetry-cpp: what its 1.19 API (ABI v1) lacks for training jobs.
//
// - Gauge<T>: a synchronous gauge (record the current value; the last one is exported at each
//   collection). ABI v1 of opentelemetry-cpp has no synchronous gauge, so this one keeps the
//   last value per attribute set and reports it through an observable gauge.
// - MetricView / histogram_view(): views for SetupOverrides::metric_views (per-instrument
//   bucket boundaries, renames, other aggregations), built from the SDK's own view types.
// - instruments_for(): the per-meter instrument cache of SPEC Part 2 §J.1 — instruments are
//   created once per meter and process, and the cache does not keep the meter alive.
//
// Counters, up-down counters, histograms and observable instruments are opentelemetry-cpp's:
// create them on TelemetryHandle::meter(). Thread-safety: every function and Gauge::record
// may be called from any thread.
#pragma once

#include <opentelemetry/metrics/async_instruments.h>
#include <opentelemetry/metrics/meter.h>
#include <opentelemetry/nostd/shared_ptr.h>
#include <opentelemetry/sdk/metrics/view/instrument_selector.h>
#include <opentelemetry/sdk/metrics/view/meter_selector.h>
#include <opentelemetry/sdk/metrics/view/view.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "lens/attributes.hpp"

namespace lens::metrics {

// One view of the meter provider (opentelemetry-cpp's selector and view types).
struct MetricView {
  std::unique_ptr<opentelemetry::sdk::metrics::InstrumentSelector> instrument;
  std::unique_ptr<opentelemetry::sdk::metrics::MeterSelector> meter;
  std::unique_ptr<opentelemetry::sdk::metrics::View> view;
};

// Explicit-bucket histogram aggregation for the histogram instrument(s) named `name` (a name
// or a pattern with '*'), with the given upper bucket boundaries (strictly increasing) and
// optionally without min/max.
MetricView histogram_view(const std::string& name, std::vector<double> boundaries,
                          bool record_min_max = true);

// The specification's default explicit-bucket boundaries (what opentelemetry-cpp uses).
const std::vector<double>& default_histogram_boundaries();

namespace detail {
template <class T>
struct GaugeState;
}  // namespace detail

// A synchronous gauge: record() sets the current value for an attribute set; every collection
// reports the last value of each attribute set recorded so far. Copies share the gauge; the
// last copy's destruction unregisters it. A gauge made on a no-op meter records nothing.
// Attribute values that are arrays of bool are not supported (they are left out).
template <class T>
class Gauge {
 public:
  Gauge() = default;  // records nothing
  void record(T value, const Attributes& attributes = {}) noexcept;

 private:
  template <class U>
  friend Gauge<U> make_gauge(opentelemetry::metrics::Meter&, std::string_view, std::string_view,
                             std::string_view);
  std::shared_ptr<detail::GaugeState<T>> state_;
};

template <class T>
Gauge<T> make_gauge(opentelemetry::metrics::Meter& meter, std::string_view name,
                    std::string_view description = "", std::string_view unit = "");

inline Gauge<double> create_double_gauge(opentelemetry::metrics::Meter& meter,
                                         std::string_view name, std::string_view description = "",
                                         std::string_view unit = "") {
  return make_gauge<double>(meter, name, description, unit);
}
inline Gauge<std::int64_t> create_int64_gauge(opentelemetry::metrics::Meter& meter,
                                              std::string_view name,
                                              std::string_view description = "",
                                              std::string_view unit = "") {
  return make_gauge<std::int64_t>(meter, name, description, unit);
}

extern template class Gauge<double>;
extern template class Gauge<std::int64_t>;
extern template Gauge<double> make_gauge<double>(opentelemetry::metrics::Meter&, std::string_view,
                                                 std::string_view, std::string_view);
extern template Gauge<std::int64_t> make_gauge<std::int64_t>(opentelemetry::metrics::Meter&,
                                                             std::string_view, std::string_view,
                                                             std::string_view);

namespace detail {
// The cached object of type `type` for `meter`, made by `make` on first use. Null when `make`
// threw (nothing is cached then, SPEC §J.1). Entries made before a fork() are not used in the
// child (their instruments belong to the parent's providers).
std::shared_ptr<void> cached_instruments(
    opentelemetry::metrics::Meter& meter, const std::type_info& type, const char* domain,
    std::shared_ptr<void> (*make)(opentelemetry::metrics::Meter&));
}  // namespace detail

// The instruments `Instruments::make(meter)` builds, created once per meter. Null when making
// them threw: then "lens: warning: Failed to create <Instruments::kDomain> metric instruments"
// is written once on stderr and nothing is cached.
template <class Instruments>
std::shared_ptr<Instruments> instruments_for(opentelemetry::metrics::Meter& meter) {
  return std::static_pointer_cast<Instruments>(
      detail::cached_instruments(meter, typeid(Instruments), Instruments::kDomain,
                                 [](opentelemetry::metrics::Meter& m) -> std::shared_ptr<void> {
                                   return Instruments::make(m);
                                 }));
}

// Forgets every cached instrument (setup and shutdown call it: a new provider may reuse the
// address of a destroyed meter).
void clear_instrument_cache() noexcept;

}  // namespace lens::metrics
