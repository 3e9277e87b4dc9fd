// Metrics setup on top of opentelemetry-cpp's SDK: views for SetupOverrides::metric_views and the
// hook a custom metric reader collects lens's bound instruments through. Apart from
// lens/metrics.hpp, which instrumented code includes and which names no SDK type.
//
// - MetricView / histogram_view(): per-instrument bucket boundaries, renames, other
//   aggregations, built from the SDK's own view types.
// - collect_with_bound_instruments() / forget_bound_reader(): for a reader of your own.
// Thread-safety: every function may be called from any thread.
#pragma once

#include <opentelemetry/nostd/function_ref.h>
#include <opentelemetry/sdk/metrics/export/metric_producer.h>
#include <opentelemetry/sdk/metrics/metric_reader.h>
#include <opentelemetry/sdk/metrics/view/instrument_selector.h>
#include <opentelemetry/sdk/metrics/view/meter_selector.h>
#include <opentelemetry/sdk/metrics/view/view.h>

#include <memory>
#include <string>
#include <vector>

#include "lens/metrics.hpp"

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

// MetricReader::Collect with the bound histograms of the reader's meters added (lens's readers
// collect this way). A custom reader that wants them collects through this function and calls
// forget_bound_reader() before it is destroyed (delta state is kept per reader address).
bool collect_with_bound_instruments(
    opentelemetry::sdk::metrics::MetricReader& reader,
    opentelemetry::nostd::function_ref<bool(opentelemetry::sdk::metrics::ResourceMetrics&)>
        callback) noexcept;
void forget_bound_reader(const opentelemetry::sdk::metrics::MetricReader& reader) noexcept;

}  // namespace lens::metrics
