// UTF-8 text cut by characters (code points) rather than bytes, as attribute value limits
// (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT) count them for spans and log records alike; and UTF-8
// checked and repaired, as W3C Baggage values and the JSON carrier form need.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lens::core {

// Number of bytes of the longest prefix of `text` with at most `max_chars` UTF-8 code points
// (never inside a sequence). Bytes that are not valid UTF-8 count as they come.
std::size_t utf8_prefix_bytes(std::string_view text, std::size_t max_chars) noexcept;

// Well-formed UTF-8 (no overlong forms, surrogates or code points above U+10FFFF).
bool is_valid_utf8(std::string_view bytes) noexcept;

// Each byte that does not start a well-formed UTF-8 sequence replaced by U+FFFD.
std::string replace_invalid_utf8(std::string_view bytes);

}  // namespace lens::core
