// Hex digits for ids, UUIDs and percent-encoding: bytes out as lowercase hex, hex digits in
// either case or, where a grammar says so (W3C Trace Context's HEXDIGLC), lowercase only.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace lens::core {

// Appends each byte of `bytes` to `out` as two lowercase hex digits.
void append_lower_hex(std::string& out, std::span<const std::uint8_t> bytes);

// The value of the hex digit `c`, or -1; with `lowercase_only`, 'A' to 'F' are not digits.
int hex_digit_value(char c, bool lowercase_only = false) noexcept;

// Decodes `hex`, exactly 2 * out.size() hex digits, into `out`; false on any other length or a
// character that is not a digit (what `out` then holds is unspecified).
bool decode_hex(std::string_view hex, std::span<std::uint8_t> out,
                bool lowercase_only = false) noexcept;

}  // namespace lens::core
