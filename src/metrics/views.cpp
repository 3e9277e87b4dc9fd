// View helpers (see lens/metrics.hpp).
#include <opentelemetry/sdk/metrics/aggregation/aggregation_config.h>
#include <opentelemetry/sdk/metrics/view/instrument_selector_factory.h>
#include <opentelemetry/sdk/metrics/view/meter_selector_factory.h>
#include <opentelemetry/sdk/metrics/view/view_factory.h>

#include "lens/metric_setup.hpp"
#include "lens/metrics.hpp"

namespace lens::metrics {

namespace sdkmetrics = opentelemetry::sdk::metrics;

const std::vector<double>& default_histogram_boundaries() {
  static const std::vector<double> boundaries{0.0,    5.0,    10.0,   25.0,   50.0,
                                              75.0,   100.0,  250.0,  500.0,  750.0,
                                              1000.0, 2500.0, 5000.0, 7500.0, 10000.0};
  return boundaries;
}

MetricView histogram_view(const std::string& name, std::vector<double> boundaries,
                          bool record_min_max) {
  auto config = std::make_shared<sdkmetrics::HistogramAggregationConfig>();
  config->boundaries_ = std::move(boundaries);
  config->record_min_max_ = record_min_max;
  MetricView view;
  view.instrument = sdkmetrics::InstrumentSelectorFactory::Create(
      sdkmetrics::InstrumentType::kHistogram, name, "");
  view.meter = sdkmetrics::MeterSelectorFactory::Create("", "", "");  // "" matches every meter
  view.view = sdkmetrics::ViewFactory::Create("", "", "", sdkmetrics::AggregationType::kHistogram,
                                              std::move(config));
  return view;
}

}  // namespace lens::metrics
