// Test support for users of lens: an in-memory span exporter whose finished spans stay readable
// after the exporter itself was moved into setup_telemetry (or a span processor).
// Thread-safety: the shared span store is lock-free and safe to read while spans are exported.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "opentelemetry/exporters/memory/in_memory_span_data.h"
#include "opentelemetry/exporters/memory/in_memory_span_exporter.h"
#include "opentelemetry/sdk/trace/exporter.h"
#include "opentelemetry/sdk/trace/span_data.h"

namespace lens::testing {

// opentelemetry-cpp's exporter: records every exported span as SpanData in a bounded buffer
// (when full, further spans are dropped).
using InMemorySpanExporter = opentelemetry::exporter::memory::InMemorySpanExporter;
using InMemorySpanData = opentelemetry::exporter::memory::InMemorySpanData;

struct InMemorySpans {
  // Hand this to setup (e.g. as the span exporter override); it may be moved away freely.
  std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> exporter;
  // Stays valid after `exporter` was moved or destroyed.
  std::shared_ptr<InMemorySpanData> data;

  // The spans exported since the last call, oldest first; the store is emptied.
  std::vector<std::unique_ptr<opentelemetry::sdk::trace::SpanData>> take_spans() const;
};

// An exporter keeping up to `buffer_size` finished spans, and the handle to read them.
InMemorySpans make_in_memory_span_exporter(std::size_t buffer_size = 4096);

// The spans in `data` exported since the last call, oldest first; empties the store.
std::vector<std::unique_ptr<opentelemetry::sdk::trace::SpanData>> take_spans(
    const std::shared_ptr<InMemorySpanData>& data);

}  // namespace lens::testing
