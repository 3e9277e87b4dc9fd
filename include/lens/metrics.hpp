// Metrics on top of opentelemetry-cpp: what its 1.19 API (ABI v1) lacks for training jobs.
//
// - Gauge<T>: a synchronous gauge (record the current value; the last one is exported at each
//   collection). ABI v1 of opentelemetry-cpp has no synchronous gauge, so this one keeps the
//   last value per attribute set and reports it through an observable gauge.
// - instruments_for(): the per-meter instrument cache (docs/metrics.md, "Training and GenAI
//   instruments") — instruments are created once per meter and process, and the cache does not
//   keep the meter alive.
// - BoundCounter<T> / BoundHistogram<T> (and Counter<T> / Histogram<T>, which bind attribute
//   sets): a recording front for a fixed attribute set that costs a few nanoseconds. Each
//   recording thread accumulates into its own slot; the SDK sees the sums at collection only
//   (docs/metrics.md, "Bound instruments").
//
// Instrumentation only: no SDK type (the views and reader hooks of setup are in
// lens/metric_setup.hpp). Counters, up-down counters, histograms and observable instruments are
// opentelemetry-cpp's: create them on TelemetryHandle::meter(). Thread-safety: every function and
// Gauge::record may be called from any thread.
#pragma once

#include <opentelemetry/metrics/async_instruments.h>
#include <opentelemetry/metrics/meter.h>
#include <opentelemetry/nostd/function_ref.h>
#include <opentelemetry/nostd/shared_ptr.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "lens/attributes.hpp"
#include "lens/detail/metric_slots.hpp"

namespace lens::metrics {

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
// threw (nothing is cached then). Entries made before a fork() are not used in the
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

// ---------------------------------------------------------------------------------------------
// Bound instruments.
//
// A bound instrument records for one attribute set fixed at creation. add()/record() write to a
// slot of the calling thread (no lock shared with other threads, no allocation after a thread's
// first recording); slots belong to the instrument and keep their values after the thread exits.
// Nothing reaches the SDK on the recording thread:
// - counters are read by an observable counter's callback at each collection (exported as the
//   instrument kind ObservableCounter: the same monotonic Sum on the wire, temporality from the
//   reader like any observable counter);
// - histograms are drained at each collection of a lens reader (the periodic reader of setup,
//   ManualMetricReader, or any reader collected through collect_with_bound_instruments()) and
//   added to the collected data as explicit-bucket histogram points of kind Histogram: exact
//   counts, sum, min and max, cumulative (start: the instrument's creation) or delta (since the
//   reader's previous collection) as the reader asks for histograms.
// Made on a no-op meter (telemetry off, non-exporting rank, forked child) or with a name the SDK
// rejects, an instrument records nothing and add()/record() return after one null test.
// Copies share the instrument. Thread-safety: add()/record() from any number of threads;
// creation and bind() from any thread.

// A monotonic counter for one fixed attribute set (T: std::uint64_t or double).
template <class T>
class BoundCounter {
 public:
  BoundCounter() = default;  // records nothing

  void add(T value) noexcept {
    if (series_ == nullptr || !detail::acceptable(value)) return;
    if (void* slot = detail::cached_slot(*series_)) {
      detail::add_to_own_slot(slot, value);
    } else {
      detail::counter_add_slow(*series_, value);
    }
  }

  // False when this instrument records nothing (no-op meter, rejected name).
  explicit operator bool() const noexcept { return series_ != nullptr; }

 private:
  template <class U>
  friend class Counter;
  std::shared_ptr<detail::CounterCore<T>> core_;
  detail::SeriesBase* series_ = nullptr;
};

// An explicit-bucket histogram for one fixed attribute set (T: std::uint64_t or double).
template <class T>
class BoundHistogram {
 public:
  BoundHistogram() = default;  // records nothing

  void record(T value) noexcept {
    if (series_ == nullptr || !detail::acceptable(value)) return;
    if (void* slot = detail::cached_slot(*series_)) {
      detail::histogram_put(*static_cast<detail::HistogramSlot<T>*>(slot), value,
                            detail::bucket_of(*series_, static_cast<double>(value)));
    } else {
      detail::histogram_record_slow(*series_, value);
    }
  }

  explicit operator bool() const noexcept { return series_ != nullptr; }

 private:
  template <class U>
  friend class Histogram;
  std::shared_ptr<detail::HistogramCore<T>> core_;
  detail::HistogramSeriesBase* series_ = nullptr;
};

// A counter whose attribute sets are bound on demand. bind() returns the handle to keep for a
// set recorded often; add(value, {{"k", v}, ...}) takes the lens::AttributeList of spans and
// logs (null values skipped) and finds the set through a small per-thread cache (no allocation
// once a thread has seen the set). At most 1998 attribute sets: later sets are
// recorded in one series with the attribute otel.metric.overflow=true.
template <class T>
class Counter {
 public:
  Counter() = default;  // records nothing
  BoundCounter<T> bind(const Attributes& attributes) const;
  void add(T value, AttributeList attributes) noexcept;
  explicit operator bool() const noexcept { return core_ != nullptr; }

 private:
  template <class U>
  friend Counter<U> make_counter(opentelemetry::metrics::Meter&, std::string_view, std::string_view,
                                 std::string_view);
  std::shared_ptr<detail::CounterCore<T>> core_;
};

// A histogram whose attribute sets are bound on demand (as Counter<T>).
template <class T>
class Histogram {
 public:
  Histogram() = default;  // records nothing
  BoundHistogram<T> bind(const Attributes& attributes) const;
  void record(T value, AttributeList attributes) noexcept;
  explicit operator bool() const noexcept { return core_ != nullptr; }

 private:
  template <class U>
  friend Histogram<U> make_histogram(opentelemetry::metrics::Meter&, std::string_view,
                                     std::string_view, std::string_view, std::vector<double>);
  std::shared_ptr<detail::HistogramCore<T>> core_;
};

// T: std::uint64_t or double. Creating two lens instruments of one name on one meter gives two
// instruments whose attribute sets must differ (bind the sets of one instrument instead).
template <class T>
Counter<T> make_counter(opentelemetry::metrics::Meter& meter, std::string_view name,
                        std::string_view description = "", std::string_view unit = "");

// `boundaries`: strictly increasing upper bucket boundaries (default: the specification's).
// Views of the meter provider do not apply to these histograms.
template <class T>
Histogram<T> make_histogram(opentelemetry::metrics::Meter& meter, std::string_view name,
                            std::string_view description = "", std::string_view unit = "",
                            std::vector<double> boundaries = default_histogram_boundaries());

inline BoundCounter<std::uint64_t> create_bound_uint64_counter(opentelemetry::metrics::Meter& meter,
                                                               std::string_view name,
                                                               const Attributes& attributes = {},
                                                               std::string_view description = "",
                                                               std::string_view unit = "") {
  return make_counter<std::uint64_t>(meter, name, description, unit).bind(attributes);
}
inline BoundCounter<double> create_bound_double_counter(opentelemetry::metrics::Meter& meter,
                                                        std::string_view name,
                                                        const Attributes& attributes = {},
                                                        std::string_view description = "",
                                                        std::string_view unit = "") {
  return make_counter<double>(meter, name, description, unit).bind(attributes);
}
inline BoundHistogram<double> create_bound_double_histogram(
    opentelemetry::metrics::Meter& meter, std::string_view name, const Attributes& attributes = {},
    std::string_view description = "", std::string_view unit = "",
    std::vector<double> boundaries = default_histogram_boundaries()) {
  return make_histogram<double>(meter, name, description, unit, std::move(boundaries))
      .bind(attributes);
}
inline BoundHistogram<std::uint64_t> create_bound_uint64_histogram(
    opentelemetry::metrics::Meter& meter, std::string_view name, const Attributes& attributes = {},
    std::string_view description = "", std::string_view unit = "",
    std::vector<double> boundaries = default_histogram_boundaries()) {
  return make_histogram<std::uint64_t>(meter, name, description, unit, std::move(boundaries))
      .bind(attributes);
}

extern template class Counter<std::uint64_t>;
extern template class Counter<double>;
extern template class Histogram<std::uint64_t>;
extern template class Histogram<double>;
extern template Counter<std::uint64_t> make_counter<std::uint64_t>(opentelemetry::metrics::Meter&,
                                                                   std::string_view,
                                                                   std::string_view,
                                                                   std::string_view);
extern template Counter<double> make_counter<double>(opentelemetry::metrics::Meter&,
                                                     std::string_view, std::string_view,
                                                     std::string_view);
extern template Histogram<std::uint64_t> make_histogram<std::uint64_t>(
    opentelemetry::metrics::Meter&, std::string_view, std::string_view, std::string_view,
    std::vector<double>);
extern template Histogram<double> make_histogram<double>(opentelemetry::metrics::Meter&,
                                                         std::string_view, std::string_view,
                                                         std::string_view, std::vector<double>);

}  // namespace lens::metrics
