// Temporality per instrument type (see metric_temporality.hpp).
#include "metrics/metric_temporality.hpp"

namespace lens::metrics {

using opentelemetry::sdk::metrics::AggregationTemporality;
using opentelemetry::sdk::metrics::InstrumentType;

AggregationTemporality temporality_for(TemporalityPreference preference,
                                       InstrumentType type) noexcept {
  const bool sync_delta = type == InstrumentType::kCounter || type == InstrumentType::kHistogram;
  const bool delta = (preference == TemporalityPreference::delta &&
                      (sync_delta || type == InstrumentType::kObservableCounter)) ||
                     (preference == TemporalityPreference::lowmemory && sync_delta);
  return delta ? AggregationTemporality::kDelta : AggregationTemporality::kCumulative;
}

}  // namespace lens::metrics
