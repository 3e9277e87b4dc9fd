// Views for bound histograms (see histogram_views.hpp).
#include "metrics/histogram_views.hpp"

#include <opentelemetry/sdk/metrics/aggregation/aggregation_config.h>
#include <opentelemetry/sdk/metrics/view/view_registry.h>

#include <algorithm>
#include <mutex>

namespace lens::metrics {
namespace {

namespace sdkmetrics = opentelemetry::sdk::metrics;

struct Registered {
  std::weak_ptr<sdkmetrics::MeterProvider> provider;  // `context` lives as long as it
  sdkmetrics::MeterContext* context;
};

struct Contexts {
  std::mutex mutex;
  std::vector<Registered> list;
};

Contexts& contexts() {
  static auto* c = new Contexts();  // leaked: used until the very end of the process
  return *c;
}

}  // namespace

void register_meter_context(const std::shared_ptr<sdkmetrics::MeterProvider>& provider,
                            sdkmetrics::MeterContext* context) {
  Contexts& c = contexts();
  std::lock_guard<std::mutex> lock(c.mutex);
  std::erase_if(c.list, [](const Registered& r) { return r.provider.expired(); });
  c.list.push_back({provider, context});
}

HistogramView find_histogram_view(sdkmetrics::Meter& meter, std::string_view name,
                                  std::string_view description, std::string_view unit,
                                  sdkmetrics::InstrumentValueType value_type) {
  HistogramView found;
  found.name = std::string(name);
  found.description = std::string(description);
  const auto* scope = meter.GetInstrumentationScope();
  if (scope == nullptr) return found;
  const sdkmetrics::InstrumentDescriptor descriptor{
      found.name, found.description, std::string(unit), sdkmetrics::InstrumentType::kHistogram,
      value_type};
  Contexts& c = contexts();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (const Registered& r : c.list) {
    const std::shared_ptr<sdkmetrics::MeterProvider> alive = r.provider.lock();
    if (alive == nullptr) continue;
    bool mine = false;
    r.context->ForEachMeter([&](std::shared_ptr<sdkmetrics::Meter>& m) {
      mine = m.get() == &meter;
      return !mine;
    });
    if (!mine) continue;
    r.context->GetViewRegistry()->FindViews(descriptor, *scope, [&](const sdkmetrics::View& view) {
      if (!view.GetName().empty()) found.name = view.GetName();
      if (!view.GetDescription().empty()) found.description = view.GetDescription();
      found.drop = view.GetAggregationType() == sdkmetrics::AggregationType::kDrop;
      if (const auto* config = dynamic_cast<const sdkmetrics::HistogramAggregationConfig*>(
              view.GetAggregationConfig())) {
        found.boundaries = config->boundaries_;
      }
      return false;  // the first view only
    });
    break;
  }
  return found;
}

}  // namespace lens::metrics
