// Temporality per instrument type (see metric_temporality.hpp).
#include "export/metric_temporality.hpp"

namespace lens::exporters {

using opentelemetry::sdk::metrics::AggregationTemporality;
using opentelemetry::sdk::metrics::InstrumentType;

AggregationTemporality temporality_for(TemporalityPreference preference,
                                       InstrumentType type) noexcept {
  switch (preference) {
    case TemporalityPreference::delta:
      if (type == InstrumentType::kCounter || type == InstrumentType::kObservableCounter ||
          type == InstrumentType::kHistogram) {
        return AggregationTemporality::kDelta;
      }
      return AggregationTemporality::kCumulative;
    case TemporalityPreference::lowmemory:
      if (type == InstrumentType::kCounter || type == InstrumentType::kHistogram) {
        return AggregationTemporality::kDelta;
      }
      return AggregationTemporality::kCumulative;
    case TemporalityPreference::cumulative:
      break;
  }
  return AggregationTemporality::kCumulative;
}

}  // namespace lens::exporters
