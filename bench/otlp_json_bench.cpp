// Benchmarks of the OTLP JSON line `lens collect` writes per trace request: the direct encoder
// (otlp_json::encode) against the generic path (protobuf's printer and nlohmann) on a request of
// 512 spans shaped like export_bench.cpp's batches. Single-threaded.
#include <benchmark/benchmark.h>
#include <opentelemetry/exporters/otlp/otlp_recordable.h>
#include <opentelemetry/exporters/otlp/otlp_recordable_utils.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>
#include <opentelemetry/sdk/resource/resource.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "export/otlp_json.hpp"

namespace {

namespace sdktrace = opentelemetry::sdk::trace;
namespace trace_api = opentelemetry::trace;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;

constexpr std::size_t kBatch = 512;

// 512 spans as the SDK's OTLP recordables make them: ids, name, kind, times, two integer
// attributes, one resource attribute, one scope.
ExportTraceServiceRequest make_request() {
  static const auto resource =
      opentelemetry::sdk::resource::Resource::Create({{"dl.rank", std::int64_t{0}}});
  static const auto scope =
      opentelemetry::sdk::instrumentationscope::InstrumentationScope::Create("nemo.lens");
  std::vector<std::unique_ptr<sdktrace::Recordable>> spans;
  for (std::size_t i = 0; i < kBatch; ++i) {
    auto span = std::make_unique<opentelemetry::exporter::otlp::OtlpRecordable>();
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
  ExportTraceServiceRequest request;
  opentelemetry::exporter::otlp::OtlpRecordableUtils::PopulateRequest(
      opentelemetry::nostd::span<std::unique_ptr<sdktrace::Recordable>>(spans.data(), spans.size()),
      &request);
  return request;
}

template <std::string (*Encode)(const google::protobuf::Message&)>
void encode_traces(benchmark::State& state) {
  const ExportTraceServiceRequest request = make_request();
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string line = Encode(request);
    bytes += line.size();
    benchmark::DoNotOptimize(line.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}

// What `lens collect` calls per trace request: the direct encoder.
void BM_OtlpJson_Encode_Traces(benchmark::State& state) {
  encode_traces<lens::otlp_json::encode>(state);
}
BENCHMARK(BM_OtlpJson_Encode_Traces)->Unit(benchmark::kMicrosecond);

// The generic path it replaces, for the ratio.
void BM_OtlpJson_Encode_Traces_Generic(benchmark::State& state) {
  encode_traces<lens::otlp_json::encode_generic>(state);
}
BENCHMARK(BM_OtlpJson_Encode_Traces_Generic)->Unit(benchmark::kMicrosecond);

}  // namespace
