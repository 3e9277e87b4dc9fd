// The SDK's exporter interface of each signal, named by the signal, so that one template serves
// traces, metrics and logs: every exporter here is a sink that takes a batch of its signal, and
// only the formatting of that batch differs by signal. Header-only and stateless.
#pragma once

#include <opentelemetry/sdk/logs/exporter.h>
#include <opentelemetry/sdk/metrics/push_metric_exporter.h>
#include <opentelemetry/sdk/trace/exporter.h>

#include <cstdint>
#include <memory>
#include <type_traits>

#include "lens/otel_settings.hpp"

namespace lens::exporters {

template <Signal S>
struct SignalSdk;

template <>
struct SignalSdk<Signal::traces> {
  using Exporter = opentelemetry::sdk::trace::SpanExporter;
  using Recordable = opentelemetry::sdk::trace::Recordable;
  using Batch = opentelemetry::nostd::span<std::unique_ptr<Recordable>>;
};

template <>
struct SignalSdk<Signal::metrics> {
  using Exporter = opentelemetry::sdk::metrics::PushMetricExporter;
  using Batch = opentelemetry::sdk::metrics::ResourceMetrics;  // one collection
};

template <>
struct SignalSdk<Signal::logs> {
  using Exporter = opentelemetry::sdk::logs::LogRecordExporter;
  using Recordable = opentelemetry::sdk::logs::Recordable;
  using Batch = opentelemetry::nostd::span<std::unique_ptr<Recordable>>;
};

template <Signal S>
using ExporterOf = typename SignalSdk<S>::Exporter;
template <Signal S>
using BatchOf = typename SignalSdk<S>::Batch;
template <Signal S>
using ExporterPtr = std::unique_ptr<ExporterOf<S>>;

// Data points in a metrics export (the items of the metrics signal).
std::uint64_t count_points(const opentelemetry::sdk::metrics::ResourceMetrics& data) noexcept;

// The items of a batch: spans, data points or log records.
template <class Batch>
std::uint64_t item_count(const Batch& batch) noexcept {
  if constexpr (std::is_same_v<Batch, BatchOf<Signal::metrics>>) {
    return count_points(batch);
  } else {
    return batch.size();
  }
}

// What the three interfaces do not share, forwarded to Derived: traces and logs make recordables
// (Derived::make_recordable), metrics choose a temporality per instrument (Derived::temporality).
template <Signal S, class Derived>
class SignalExporter : public ExporterOf<S> {
 public:
  std::unique_ptr<typename SignalSdk<S>::Recordable> MakeRecordable() noexcept override {
    return static_cast<Derived*>(this)->make_recordable();
  }
};

template <class Derived>
class SignalExporter<Signal::metrics, Derived> : public ExporterOf<Signal::metrics> {
 public:
  opentelemetry::sdk::metrics::AggregationTemporality GetAggregationTemporality(
      opentelemetry::sdk::metrics::InstrumentType type) const noexcept override {
    return static_cast<const Derived*>(this)->temporality(type);
  }
};

}  // namespace lens::exporters
