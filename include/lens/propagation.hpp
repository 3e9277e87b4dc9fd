// W3C Trace Context and W3C Baggage propagation over a string map, and the JSON byte form of that
// map used to broadcast a context over NCCL/MPI (docs/tracing.md, "Propagating a context between
// processes"). Every function is reentrant and thread-safe (no shared state), never throws, and
// reads no environment.
#pragma once

#include <opentelemetry/context/context.h>
#include <opentelemetry/context/runtime_context.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace lens {

// Header name -> header value. Names are written lowercase (`traceparent`, `tracestate`,
// `baggage`) and read case-insensitively.
using Carrier = std::map<std::string, std::string>;

// Writes the context into `carrier`:
//   traceparent  "00-<32 lower hex trace id>-<16 lower hex span id>-<2 lower hex flags>", only when
//                the context's span context is valid (any existing traceparent/tracestate header,
//                in any letter case, is replaced);
//   tracestate   only when the span context carries a non-empty trace state;
//   baggage      only when the context has baggage entries: `key=value` list members joined by
//                ",", values percent-encoded (everything but ALPHA DIGIT "-" "." "_" "~"); entries
//                whose key is not an RFC 7230 token, or that would push the header past 8192 bytes
//                or 180 members, are left out whole.
// Other headers in `carrier` are kept.
void inject_context(Carrier& carrier,
                    const opentelemetry::context::Context& context =
                        opentelemetry::context::RuntimeContext::GetCurrent()) noexcept;

// Returns `base` plus what the carrier holds:
//   a remote, non-recording span context (trace::DefaultSpan) when exactly one `traceparent`
//   header is present and valid under strict W3C Trace Context rules (lowercase hex, exact field
//   sizes, version != ff, non-zero ids, version 00 exactly 55 characters, a higher version may be
//   followed by "-" and further fields, which are ignored); otherwise no span context is added;
//   its trace state when every `tracestate` list member is valid (at most 32, unique keys), else
//   an empty trace state with the traceparent kept;
//   baggage when the `baggage` header holds at least one valid list member (invalid members are
//   skipped, a header over 8192 bytes is ignored, properties after ";" are dropped, values are
//   percent-decoded with "+" kept literal). Baggage is never copied to span attributes.
opentelemetry::context::Context extract_context(
    const Carrier& carrier, const opentelemetry::context::Context& base =
                                opentelemetry::context::RuntimeContext::GetCurrent()) noexcept;

// Compact JSON object of the carrier `inject_context` would produce for `context`, keys sorted:
// `{"traceparent":"00-...-...-01"}`, or `{}` when there is nothing to propagate. UTF-8.
std::string serialize_context(const opentelemetry::context::Context& context =
                                  opentelemetry::context::RuntimeContext::GetCurrent()) noexcept;

// Parses bytes made by `serialize_context` (or any JSON object whose values are all strings).
// nullopt on invalid UTF-8, invalid JSON, a JSON value that is not an object, or a non-string
// value. A repeated key keeps its last value.
std::optional<Carrier> deserialize_context(std::string_view bytes) noexcept;

}  // namespace lens
