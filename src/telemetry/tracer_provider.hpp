// Builds an exporting rank's opentelemetry-cpp tracer provider from the lens config: resource,
// seed-independent ids, the configured sampler, span limits, and the processor chain
// (open-span closer counting spans, batch processor with the OTEL_BSP_* options) in front of
// the exporter. Nothing is installed globally here. Thread-safety: stateless.
#pragma once

#include <opentelemetry/sdk/trace/exporter.h>
#include <opentelemetry/sdk/trace/tracer_provider.h>

#include <functional>
#include <memory>

#include "lens/attributes.hpp"
#include "lens/config.hpp"
#include "lens/rank_info.hpp"
#include "lens/result.hpp"
#include "sdk/span_counts.hpp"

namespace lens::sdk {
class CountingExporter;
}

namespace lens::telemetry {

struct BuiltTracerProvider {
  std::shared_ptr<opentelemetry::sdk::trace::TracerProvider> provider;
  std::shared_ptr<sdk::SpanCounts> counts;
  // Reads spans exported and failed; owned by the provider's exporter chain.
  std::function<std::uint64_t()> exported;
  std::function<std::uint64_t()> failed;
};

Result<BuiltTracerProvider> build_tracer_provider(
    const Config& config, const RankInfo& rank, const Attributes& resource,
    std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> exporter);

}  // namespace lens::telemetry
