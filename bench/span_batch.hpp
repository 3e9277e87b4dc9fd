// Shared by the export benchmarks: a batch of recordables shaped like a training step's spans
// (ids, name, kind, times, two integer attributes, one resource attribute, one scope), made by
// whatever recordable factory the benchmark exports through.
#pragma once

#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>
#include <opentelemetry/sdk/resource/resource.h>
#include <opentelemetry/sdk/trace/recordable.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace lens::bench {

inline constexpr std::size_t kBatch = 512;

template <class MakeRecordable>
std::vector<std::unique_ptr<opentelemetry::sdk::trace::Recordable>> make_span_batch(
    MakeRecordable&& make) {
  namespace trace_api = opentelemetry::trace;
  static const auto resource =
      opentelemetry::sdk::resource::Resource::Create({{"dl.rank", std::int64_t{0}}});
  static const auto scope =
      opentelemetry::sdk::instrumentationscope::InstrumentationScope::Create("nemo.lens");
  std::vector<std::unique_ptr<opentelemetry::sdk::trace::Recordable>> spans;
  for (std::size_t i = 0; i < kBatch; ++i) {
    std::unique_ptr<opentelemetry::sdk::trace::Recordable> span = make();
    const std::array<std::uint8_t, 16> trace_id = {1, 2,  3,  4,  5,  6,  7,  8,
                                                   9, 10, 11, 12, 13, 14, 15, 16};
    const std::array<std::uint8_t, 8> span_id = {
        0, 0, 0, 0, 0, 0, static_cast<std::uint8_t>(i >> 8), static_cast<std::uint8_t>(i + 1)};
    span->SetIdentity(
        trace_api::SpanContext(trace_api::TraceId(trace_id), trace_api::SpanId(span_id),
                               trace_api::TraceFlags(1), false),
        trace_api::SpanId());
    span->SetName("megatron.train_step");
    span->SetSpanKind(trace_api::SpanKind::kInternal);
    span->SetStartTime(opentelemetry::common::SystemTimestamp(std::chrono::system_clock::now()));
    span->SetDuration(std::chrono::microseconds(250));
    span->SetAttribute("iteration", static_cast<std::int64_t>(i));
    span->SetAttribute("microbatch", 4);
    span->SetResource(resource);
    span->SetInstrumentationScope(*scope);
    spans.push_back(std::move(span));
  }
  return spans;
}

}  // namespace lens::bench
