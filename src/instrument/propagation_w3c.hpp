// Strict W3C Trace Context (traceparent, tracestate) and W3C Baggage codecs behind
// lens/propagation.hpp (hex, percent-encoding and UTF-8 checks come from core). Pure functions:
// thread-safe, no shared state; they allocate and so may throw std::bad_alloc only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lens::propagation_detail {

using Members = std::vector<std::pair<std::string, std::string>>;

// Limits (W3C Trace Context §3.3.1 and W3C Baggage §3.3, as enforced by opentelemetry).
inline constexpr std::size_t kMaxTraceStateMembers = 32;
inline constexpr std::size_t kMaxBaggageMembers = 180;
inline constexpr std::size_t kMaxBaggageMemberBytes = 4096;
inline constexpr std::size_t kMaxBaggageBytes = 8192;

struct TraceParent {
  std::array<std::uint8_t, 16> trace_id{};
  std::array<std::uint8_t, 8> span_id{};
  std::uint8_t flags = 0;
};

// Space and horizontal tab (RFC 7230 OWS) removed from both ends.
std::string_view trim_ows(std::string_view text) noexcept;

// `version-traceid-parentid-flags`, lowercase hex, exact sizes; version ff invalid; version 00
// exactly 55 characters; a higher version is 55 characters or continues with "-" (the rest is
// ignored); all-zero trace id or span id invalid. No trimming: the caller trims.
std::optional<TraceParent> parse_traceparent(std::string_view value) noexcept;

// Lowercase "00-<trace>-<span>-<flags>".
std::string format_traceparent(const TraceParent& parent);

// The members of a tracestate header in order (empty members skipped), or nullopt when any
// member is malformed, a key repeats, or there are more than 32 members.
std::optional<Members> parse_tracestate(std::string_view header);

bool is_valid_tracestate_key(std::string_view key) noexcept;
bool is_valid_tracestate_value(std::string_view value) noexcept;

// RFC 7230 token (the W3C Baggage key grammar).
bool is_token(std::string_view text) noexcept;

// Valid baggage members in order; invalid members are skipped, a repeated key keeps its last
// value in its first position, properties after ";" are dropped, a header over 8192 bytes yields
// nothing, at most 180 members are kept. Values are percent-decoded ("+" stays "+"), invalid
// UTF-8 after decoding becomes U+FFFD, a value that decodes to a NUL byte drops its member.
Members parse_baggage(std::string_view header);

// `key=percent-encoded value` joined by ","; members with a non-token key, over 4096 bytes, or
// that would exceed 180 members or 8192 bytes in all are left out whole.
std::string format_baggage(const Members& members);

// nullopt when `value` holds a character outside the W3C baggage-octet set or a malformed "%".
std::optional<std::string> percent_decode(std::string_view value);

}  // namespace lens::propagation_detail
