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

#include "lens/otlp_json.hpp"
#include "span_batch.hpp"

namespace {

namespace sdktrace = opentelemetry::sdk::trace;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;

using lens::bench::kBatch;

// 512 spans as the SDK's OTLP recordables make them (span_batch.hpp).
ExportTraceServiceRequest make_request() {
  auto spans = lens::bench::make_span_batch(
      [] { return std::make_unique<opentelemetry::exporter::otlp::OtlpRecordable>(); });
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
