// inject_context / extract_context (lens/propagation.hpp): W3C Trace Context and Baggage between
// an opentelemetry Context and a Carrier, using the strict codecs of propagation_w3c.hpp.
// Thread-safe: no shared state; nothing throws out of these functions.
#include "lens/propagation.hpp"

#include <opentelemetry/baggage/baggage.h>
#include <opentelemetry/baggage/baggage_context.h>
#include <opentelemetry/nostd/shared_ptr.h>
#include <opentelemetry/nostd/span.h>
#include <opentelemetry/trace/context.h>
#include <opentelemetry/trace/default_span.h>
#include <opentelemetry/trace/span_context.h>
#include <opentelemetry/trace/trace_state.h>

#include <string_view>
#include <vector>

#include "instrument/propagation_w3c.hpp"

namespace lens {
namespace {

namespace otel = opentelemetry;
namespace pd = propagation_detail;

constexpr std::string_view kTraceParent = "traceparent";
constexpr std::string_view kTraceState = "tracestate";
constexpr std::string_view kBaggage = "baggage";

char ascii_lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

bool equals_ignore_case(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) {
      return false;
    }
  }
  return true;
}

// Every value whose key matches `name` in any letter case, in carrier order.
std::vector<std::string_view> header_values(const Carrier& carrier, std::string_view name) {
  std::vector<std::string_view> values;
  for (const auto& [key, value] : carrier) {
    if (equals_ignore_case(key, name)) {
      values.emplace_back(value);
    }
  }
  return values;
}

// Repeated headers combine as one comma-separated list (RFC 7230 §3.2.2).
std::string joined_header(const Carrier& carrier, std::string_view name) {
  std::string joined;
  for (std::string_view value : header_values(carrier, name)) {
    if (!joined.empty()) {
      joined.push_back(',');
    }
    joined.append(value);
  }
  return joined;
}

void erase_header(Carrier& carrier, std::string_view name) {
  std::erase_if(carrier, [&](const auto& entry) { return equals_ignore_case(entry.first, name); });
}

otel::nostd::shared_ptr<otel::trace::TraceState> trace_state_from(std::string_view header) {
  const std::optional<pd::Members> members = pd::parse_tracestate(header);
  if (!members || members->empty()) {
    return otel::trace::TraceState::GetDefault();
  }
  // Re-serialise the validated members so opentelemetry's (more lenient) parser sees only
  // well-formed input; a count mismatch would mean it disagreed, so keep nothing then.
  std::string normalized;
  for (const auto& [key, value] : *members) {
    if (!normalized.empty()) {
      normalized.push_back(',');
    }
    normalized += key;
    normalized.push_back('=');
    normalized += value;
  }
  auto state = otel::trace::TraceState::FromHeader(normalized);
  std::size_t count = 0;
  state->GetAllEntries([&count](otel::nostd::string_view, otel::nostd::string_view) {
    ++count;
    return true;
  });
  return count == members->size() ? state : otel::trace::TraceState::GetDefault();
}

// The traceparent/tracestate pair as a remote span context; invalid when absent or malformed.
otel::trace::SpanContext span_context_from(const Carrier& carrier) {
  const std::vector<std::string_view> parents = header_values(carrier, kTraceParent);
  if (parents.size() != 1) {
    return otel::trace::SpanContext::GetInvalid();  // none, or duplicated: restart the trace
  }
  const std::optional<pd::TraceParent> parent = pd::parse_traceparent(pd::trim_ows(parents[0]));
  if (!parent) {
    return otel::trace::SpanContext::GetInvalid();
  }
  return otel::trace::SpanContext(
      otel::trace::TraceId(otel::nostd::span<const std::uint8_t, 16>(parent->trace_id)),
      otel::trace::SpanId(otel::nostd::span<const std::uint8_t, 8>(parent->span_id)),
      otel::trace::TraceFlags(parent->flags), /*is_remote=*/true,
      trace_state_from(joined_header(carrier, kTraceState)));
}

void inject_trace_context(Carrier& carrier, const otel::context::Context& context) {
  const otel::trace::SpanContext span_context = otel::trace::GetSpan(context)->GetContext();
  if (!span_context.IsValid()) {
    return;
  }
  pd::TraceParent parent;
  span_context.trace_id().CopyBytesTo(parent.trace_id);
  span_context.span_id().CopyBytesTo(parent.span_id);
  parent.flags = span_context.trace_flags().flags();
  erase_header(carrier, kTraceParent);
  erase_header(carrier, kTraceState);  // a stale tracestate belongs to another traceparent
  carrier.emplace(kTraceParent, pd::format_traceparent(parent));
  const std::string trace_state = span_context.trace_state()->ToHeader();
  if (!trace_state.empty()) {
    carrier.emplace(kTraceState, trace_state);
  }
}

void inject_baggage(Carrier& carrier, const otel::context::Context& context) {
  pd::Members members;
  otel::baggage::GetBaggage(context)->GetAllEntries(
      [&members](otel::nostd::string_view key, otel::nostd::string_view value) {
        members.emplace_back(std::string(key.data(), key.size()),
                             std::string(value.data(), value.size()));
        return true;
      });
  std::string header = pd::format_baggage(members);
  if (header.empty()) {
    return;
  }
  erase_header(carrier, kBaggage);
  carrier.emplace(kBaggage, std::move(header));
}

}  // namespace

void inject_context(Carrier& carrier, const otel::context::Context& context) noexcept {
  try {
    inject_trace_context(carrier, context);
    inject_baggage(carrier, context);
  } catch (...) {
    // Only std::bad_alloc can get here; propagation is best effort and must not throw.
  }
}

otel::context::Context extract_context(const Carrier& carrier,
                                       const otel::context::Context& base) noexcept {
  try {
    otel::context::Context result = base;
    const otel::trace::SpanContext span_context = span_context_from(carrier);
    if (span_context.IsValid()) {
      result = otel::trace::SetSpan(result, otel::nostd::shared_ptr<otel::trace::Span>(
                                                new otel::trace::DefaultSpan(span_context)));
    }
    const pd::Members members = pd::parse_baggage(joined_header(carrier, kBaggage));
    if (!members.empty()) {
      // Constructed from the decoded members directly: Baggage::Set would reject non-ASCII
      // values that W3C Baggage allows (percent-encoded UTF-8).
      result = otel::baggage::SetBaggage(result, otel::nostd::shared_ptr<otel::baggage::Baggage>(
                                                     new otel::baggage::Baggage(members)));
    }
    return result;
  } catch (...) {
    return base;  // only std::bad_alloc can get here
  }
}

}  // namespace lens
