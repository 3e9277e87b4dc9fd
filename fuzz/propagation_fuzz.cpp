// Fuzz target: W3C traceparent, tracestate and baggage through lens::extract_context, and the JSON
// carrier of broadcast contexts through lens::deserialize_context; what was extracted must inject,
// serialize and extract again to the same thing.
#include <opentelemetry/baggage/baggage_context.h>
#include <opentelemetry/context/context.h>
#include <opentelemetry/trace/context.h>
#include <opentelemetry/trace/span_context.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "lens/propagation.hpp"

namespace {

namespace context = opentelemetry::context;
namespace trace = opentelemetry::trace;

std::optional<lens::Carrier> carrier_from(const std::uint8_t* data, std::size_t size) {
  const std::string_view rest = lens::fuzz::as_text(data + 1, size - 1);
  lens::Carrier carrier;
  switch (data[0] % 3) {
    case 0:
      for (const std::string& line : lens::fuzz::split(rest, '\n')) {
        const std::size_t colon = line.find(':');
        carrier[line.substr(0, colon)] = colon == std::string::npos ? "" : line.substr(colon + 1);
      }
      return carrier;
    case 1:
      return lens::deserialize_context(rest);
    default: {
      const std::vector<std::string> values = lens::fuzz::split(rest, '\n');
      const char* names[] = {"traceparent", "tracestate", "baggage"};
      for (std::size_t i = 0; i < values.size() && i < 3; ++i) {
        carrier[names[i]] = values[i];
      }
      return carrier;
    }
  }
}

// The baggage header's members, sorted: member order carries no meaning (W3C Baggage §3.2.1.1).
std::vector<std::string> members(const lens::Carrier& carrier) {
  const auto it = carrier.find("baggage");
  std::vector<std::string> out =
      it == carrier.end() ? std::vector<std::string>{} : lens::fuzz::split(it->second, ',');
  std::sort(out.begin(), out.end());
  return out;
}

std::string text(const lens::Carrier& carrier) {
  std::string out;
  for (const auto& [name, value] : carrier) {
    out += name + ": " + value + "\n";
  }
  return out;
}

}  // namespace

// Input: byte 0 % 3 picks the form of the rest: 0 "name:value" header lines (any names, any case),
// 1 a JSON carrier, 2 the three values traceparent, tracestate, baggage on '\n'-separated lines.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::optional<lens::Carrier> carrier = carrier_from(data, size);
  if (!carrier) {
    return 0;
  }
  const context::Context extracted = lens::extract_context(*carrier, context::Context{});
  const trace::SpanContext span = trace::GetSpan(extracted)->GetContext();
  if (span.IsValid() && !span.IsRemote()) {
    lens::fuzz::fail("an extracted span context is not remote");
  }
  (void)opentelemetry::baggage::GetBaggage(extracted)->ToHeader();

  lens::Carrier injected;
  lens::inject_context(injected, extracted);
  // serialize_context is the JSON form of exactly what inject_context writes.
  const std::string json = lens::serialize_context(extracted);
  const std::optional<lens::Carrier> decoded = lens::deserialize_context(json);
  if (!decoded || *decoded != injected) {
    lens::fuzz::fail("serialize_context gave '" + json + "', not the injected carrier:\n" +
                     text(injected));
  }

  // Once normalised by an extract-inject round, a context survives further rounds unchanged.
  const context::Context again = lens::extract_context(injected, context::Context{});
  const trace::SpanContext span_again = trace::GetSpan(again)->GetContext();
  if (span_again.IsValid() != span.IsValid() || span_again.trace_id() != span.trace_id() ||
      span_again.span_id() != span.span_id() || span_again.trace_flags() != span.trace_flags()) {
    lens::fuzz::fail("the span context changed in a round trip through:\n" + text(injected));
  }
  lens::Carrier reinjected;
  lens::inject_context(reinjected, again);
  if (reinjected.count("traceparent") != injected.count("traceparent") ||
      (injected.count("traceparent") != 0 &&
       reinjected["traceparent"] != injected["traceparent"]) ||
      reinjected.count("tracestate") != injected.count("tracestate") ||
      (injected.count("tracestate") != 0 && reinjected["tracestate"] != injected["tracestate"]) ||
      members(reinjected) != members(injected)) {
    lens::fuzz::fail("a second round trip changed the carrier:\n" + text(injected) + "into:\n" +
                     text(reinjected));
  }
  return 0;
}
