// The views of lens-built meter providers, as they apply to lens's bound histograms: those reach
// the SDK's data at collection, past the SDK's own view matching, so make_histogram() asks here
// which view selects it (the first one that does, by the SDK's own matching rules).
// Thread-safety: all functions are thread-safe (one mutex).
#pragma once

#include <opentelemetry/sdk/metrics/meter.h>
#include <opentelemetry/sdk/metrics/meter_context.h>
#include <opentelemetry/sdk/metrics/meter_provider.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lens::metrics {

// Remembers the context of a provider lens built (until the provider is gone).
void register_meter_context(
    const std::shared_ptr<opentelemetry::sdk::metrics::MeterProvider>& provider,
    opentelemetry::sdk::metrics::MeterContext* context);

struct HistogramView {
  bool drop = false;  // the view's aggregation is Drop
  std::string name;   // the stream's name (the view's, or the instrument's)
  std::string description;
  std::optional<std::vector<double>> boundaries;  // explicit-bucket boundaries of the view
};

// What the first view selecting a histogram `name` (with `unit`) on `meter` makes of it; the
// instrument's own name and description when no view does or the meter is not lens-built.
HistogramView find_histogram_view(opentelemetry::sdk::metrics::Meter& meter, std::string_view name,
                                  std::string_view description, std::string_view unit,
                                  opentelemetry::sdk::metrics::InstrumentValueType value_type);

}  // namespace lens::metrics
