// The depths of spans open now that a child may reach other than through its own thread's native
// stack: opentelemetry API spans (third-party instrumentation through the tracer provider),
// native spans seen through the opentelemetry context (captured, carried to another thread,
// propagated), and lens::Span spans (SpanScope). Kept only while the installed pipeline's
// exporter shows depths (the text console): otherwise empty, and never locked. Thread-safe;
// an entry lives from when it is remembered to the span's end.
#pragma once

#include <cstdint>
#include <optional>

namespace lens::native {

// Whether depths are remembered (set as a span pipeline is activated).
void set_depth_tracking(bool on) noexcept;
bool depth_tracking() noexcept;

void remember_span_depth(std::uint64_t span_id, std::uint8_t depth) noexcept;
void forget_span_depth(std::uint64_t span_id) noexcept;
std::optional<std::uint8_t> remembered_span_depth(std::uint64_t span_id) noexcept;

// The depth of a span open now in this process, by id: one of the calling thread's native spans
// (a context attached below the top of its stack), else a remembered one; nullopt when neither.
std::optional<std::uint8_t> open_span_depth(std::uint64_t span_id) noexcept;

}  // namespace lens::native
