// Internal text parsing (and percent-encoding) shared by the config, rank-detection, resource
// and instrument layers. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lens::detail {

std::string_view trim(std::string_view text) noexcept;
std::string to_lower(std::string_view text);
// Splits on `separator`, keeping empty parts.
std::vector<std::string_view> split(std::string_view text, char separator);

// Boolean words accepted by lens variables: 1/0, true/false, yes/no, on/off, any case.
std::optional<bool> parse_bool(std::string_view text);
// [+-]?digits with optional '_' between digits (Python int() rules); no surrounding junk.
std::optional<std::int64_t> parse_int64(std::string_view text);
// Python float() rules: decimal or exponent forms, '.5', 'inf', 'nan', optional sign.
std::optional<double> parse_double(std::string_view text);
// Percent-decoding (%XX, either case); nullopt on a malformed escape.
std::optional<std::string> percent_decode(std::string_view text);
// Percent-encoding (RFC 3986): every byte but the unreserved ALPHA / DIGIT / "-" / "." / "_" /
// "~" as %XX in uppercase hex.
std::string percent_encode(std::string_view text);

// Quotes a value for an error message: 'value'.
std::string quoted(std::string_view text);

}  // namespace lens::detail
