// SamplerAdapter: presents a lens::Sampler (standard, rank-aware or a registered strategy's) to
// opentelemetry-cpp's TracerProvider. Thread-safety: immutable after construction; ShouldSample
// may run concurrently on any thread (lens samplers are immutable and noexcept).
#pragma once

#include <memory>
#include <string>

#include "lens/sampling.hpp"
#include "opentelemetry/sdk/trace/sampler.h"

namespace lens::sdk {

// Mapping: drop -> DROP, record_only -> RECORD_ONLY, record_and_sample -> RECORD_AND_SAMPLE.
// The result carries no attributes of the sampler's own (the SDK sets the span's start
// attributes itself; handing them back would set each twice). For every decision the result
// keeps a valid parent's trace state (nullptr for a root span, where the Tracer uses the default
// empty state): a sampler that only decides must not erase vendor entries a parent propagated.
class SamplerAdapter final : public opentelemetry::sdk::trace::Sampler {
 public:
  // `sampler` must not be null.
  explicit SamplerAdapter(std::shared_ptr<const lens::Sampler> sampler);

  opentelemetry::sdk::trace::SamplingResult ShouldSample(
      const opentelemetry::trace::SpanContext& parent_context,
      opentelemetry::trace::TraceId trace_id, opentelemetry::nostd::string_view name,
      opentelemetry::trace::SpanKind span_kind,
      const opentelemetry::common::KeyValueIterable& attributes,
      const opentelemetry::trace::SpanContextKeyValueIterable& links) noexcept override;

  // The lens sampler's description(), e.g. "RankAwareSampler(rank=3, rate=0.5)".
  opentelemetry::nostd::string_view GetDescription() const noexcept override;

  const std::shared_ptr<const lens::Sampler>& sampler() const noexcept { return sampler_; }

 private:
  std::shared_ptr<const lens::Sampler> sampler_;
  std::string description_;
};

}  // namespace lens::sdk
