// UTF-8 text cut by characters (code points) rather than bytes, as attribute value limits
// (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT) count them for spans and log records alike.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

namespace lens::core {

// Number of bytes of the longest prefix of `text` with at most `max_chars` UTF-8 code points
// (never inside a sequence). Bytes that are not valid UTF-8 count as they come.
std::size_t utf8_prefix_bytes(std::string_view text, std::size_t max_chars) noexcept;

}  // namespace lens::core
