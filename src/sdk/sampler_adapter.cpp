// lens::Sampler -> opentelemetry::sdk::trace::Sampler. Thread-safety: see sampler_adapter.hpp.
#include "sdk/sampler_adapter.hpp"

#include <string>
#include <utility>

#include "opentelemetry/common/key_value_iterable.h"
#include "opentelemetry/trace/span_context.h"
#include "opentelemetry/trace/trace_state.h"

namespace lens::sdk {

namespace otel_sdk = opentelemetry::sdk::trace;

SamplerAdapter::SamplerAdapter(std::shared_ptr<const lens::Sampler> sampler)
    : sampler_(std::move(sampler)), description_(sampler_ ? sampler_->description() : "") {}

otel_sdk::SamplingResult SamplerAdapter::ShouldSample(
    const opentelemetry::trace::SpanContext& parent_context, opentelemetry::trace::TraceId trace_id,
    opentelemetry::nostd::string_view name, opentelemetry::trace::SpanKind /*span_kind*/,
    const opentelemetry::common::KeyValueIterable& /*attributes*/,
    const opentelemetry::trace::SpanContextKeyValueIterable& /*links*/) noexcept {
  otel_sdk::SamplingResult result{otel_sdk::Decision::DROP, nullptr, {}};
  if (parent_context.IsValid()) result.trace_state = parent_context.trace_state();
  if (!sampler_) return result;

  SamplingParams params;
  const auto id = trace_id.Id();
  for (std::size_t i = 0; i < params.trace_id.size(); ++i) params.trace_id[i] = id[i];
  params.has_parent = parent_context.IsValid();
  params.parent_sampled = params.has_parent && parent_context.IsSampled();
  params.parent_remote = params.has_parent && parent_context.IsRemote();
  params.name = std::string_view(name.data(), name.size());

  switch (sampler_->should_sample(params)) {
    case SamplingDecision::drop:
      result.decision = otel_sdk::Decision::DROP;
      break;
    case SamplingDecision::record_only:
      result.decision = otel_sdk::Decision::RECORD_ONLY;
      break;
    case SamplingDecision::record_and_sample:
      // No attributes of the sampler's own: the SDK sets the span's start attributes itself,
      // and handing them back here would set each of them twice.
      result.decision = otel_sdk::Decision::RECORD_AND_SAMPLE;
      break;
  }
  return result;
}

opentelemetry::nostd::string_view SamplerAdapter::GetDescription() const noexcept {
  return {description_.data(), description_.size()};
}

}  // namespace lens::sdk
