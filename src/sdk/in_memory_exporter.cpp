// lens::testing in-memory exporter helpers. Thread-safety: see the public header.
#include "lens/testing/in_memory_exporter.hpp"

namespace lens::testing {

std::vector<std::unique_ptr<opentelemetry::sdk::trace::SpanData>> take_spans(
    const std::shared_ptr<InMemorySpanData>& data) {
  if (!data) return {};
  return data->GetSpans();
}

std::vector<std::unique_ptr<opentelemetry::sdk::trace::SpanData>> InMemorySpans::take_spans()
    const {
  return testing::take_spans(data);
}

InMemorySpans make_in_memory_span_exporter(std::size_t buffer_size) {
  auto exporter = std::make_unique<InMemorySpanExporter>(buffer_size);
  auto data = exporter->GetData();
  return InMemorySpans{std::move(exporter), std::move(data)};
}

}  // namespace lens::testing
