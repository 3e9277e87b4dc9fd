// Reading what opentelemetry-cpp's in-memory span exporter kept, for the span tests: the
// exporter's names (lens/testing/in_memory_exporter.hpp's), spans by name and a span's attribute
// values.
#pragma once

#include <gtest/gtest.h>
#include <opentelemetry/nostd/variant.h>
#include <opentelemetry/sdk/trace/span_data.h>

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lens/testing/in_memory_exporter.hpp"

namespace lens::test_support {

using lens::testing::InMemorySpanData;
using lens::testing::InMemorySpanExporter;
using SpanData = opentelemetry::sdk::trace::SpanData;
using SpanDataPtr = std::unique_ptr<SpanData>;

// The first span called `name`, or null.
inline const SpanData* find_span(const std::vector<SpanDataPtr>& spans, std::string_view name) {
  for (const auto& span : spans) {
    if (std::string_view(span->GetName().data(), span->GetName().size()) == name) {
      return span.get();
    }
  }
  return nullptr;
}

// The first span of each name, in the order of `names`; null, and a test failure, for a name no
// span has: `const auto [outer, inner] = find_spans(spans, {"outer", "inner"});`.
template <std::size_t N>
std::array<const SpanData*, N> find_spans(const std::vector<SpanDataPtr>& spans,
                                          const char* const (&names)[N]) {
  std::array<const SpanData*, N> found{};
  for (std::size_t i = 0; i < N; ++i) {
    found[i] = find_span(spans, names[i]);
    if (found[i] == nullptr) ADD_FAILURE() << "no span named " << names[i];
  }
  return found;
}

inline bool has_attr(const SpanData& span, const std::string& key) {
  return span.GetAttributes().count(key) != 0;
}

// The attribute `key` of `span` as a T; T{} and a test failure when the span lacks it.
template <class T>
T attr(const SpanData& span, const std::string& key) {
  const auto& attributes = span.GetAttributes();
  const auto it = attributes.find(key);
  if (it == attributes.end()) {
    ADD_FAILURE() << "no attribute " << key << " on " << span.GetName();
    return T{};
  }
  return opentelemetry::nostd::get<T>(it->second);
}

}  // namespace lens::test_support
