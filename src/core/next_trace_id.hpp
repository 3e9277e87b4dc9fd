// A per-thread request for the trace id of the next root span (lens::NewTrace): the span
// primitives set it just before starting a root span, lens's id generator takes it instead of
// drawing a random id. Lives below both so that neither depends on the other.
// Thread-safety: thread_local state; a request is only ever seen by the thread that made it.
#pragma once

#include <array>
#include <cstdint>

namespace lens::core {

// An all-zero id clears the request.
void request_next_trace_id(const std::array<std::uint8_t, 16>& id) noexcept;
// Drops a request nobody took (the active tracer may use another id generator).
void clear_next_trace_id() noexcept;
// Moves the pending request into `out`; false (and `out` untouched) when there is none.
bool take_next_trace_id(std::array<std::uint8_t, 16>& out) noexcept;

}  // namespace lens::core
