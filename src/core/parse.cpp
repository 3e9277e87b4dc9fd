// Text parsing helpers (see parse.hpp).
#include "core/parse.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/hex.hpp"

namespace lens::detail {

std::string_view trim(std::string_view text) noexcept {
  const auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && is_space(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && is_space(text.back())) {
    text.remove_suffix(1);
  }
  return text;
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    auto pos = text.find(separator, start);
    if (pos == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

std::optional<bool> parse_bool(std::string_view text) {
  const std::string word = to_lower(trim(text));
  if (word == "1" || word == "true" || word == "yes" || word == "on") {
    return true;
  }
  if (word == "0" || word == "false" || word == "no" || word == "off") {
    return false;
  }
  return std::nullopt;
}

std::optional<std::int64_t> parse_int64(std::string_view text) {
  text = trim(text);
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || text.front() == '_' || text.back() == '_') {
    return std::nullopt;
  }
  // Accumulate as a negative number so that INT64_MIN parses.
  std::int64_t value = 0;
  char previous = '\0';
  for (char c : text) {
    if (c == '_') {
      if (previous == '_') {
        return std::nullopt;
      }
      previous = c;
      continue;
    }
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    const int digit = c - '0';
    if (value < (std::numeric_limits<std::int64_t>::min() + digit) / 10) {
      return std::nullopt;
    }
    value = value * 10 - digit;
    previous = c;
  }
  if (!negative) {
    if (value == std::numeric_limits<std::int64_t>::min()) {
      return std::nullopt;
    }
    value = -value;
  }
  return value;
}

std::optional<double> parse_double(std::string_view text) {
  text = trim(text);
  if (text.empty()) {
    return std::nullopt;
  }
  std::string body(text);
  // Reject what strtod accepts but Python's float() does not: hex floats.
  const std::string lowered = to_lower(body);
  if (lowered.find("0x") != std::string::npos) {
    return std::nullopt;
  }
  std::string_view unsigned_part = lowered;
  if (unsigned_part.front() == '+' || unsigned_part.front() == '-') {
    unsigned_part.remove_prefix(1);
  }
  if (unsigned_part == "inf" || unsigned_part == "infinity") {
    return lowered.front() == '-' ? -std::numeric_limits<double>::infinity()
                                  : std::numeric_limits<double>::infinity();
  }
  if (unsigned_part == "nan") {
    return std::numeric_limits<double>::quiet_NaN();
  }
  for (char c : unsigned_part) {
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == '+' ||
          c == '-' || c == '_')) {
      return std::nullopt;
    }
  }
  std::string digits;
  for (char c : body) {
    if (c != '_') {
      digits.push_back(c);
    }
  }
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || end == digits.c_str()) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) {  // "%" needs two hex digits after it
      return std::nullopt;
    }
    const int high = core::hex_digit_value(text[i + 1]);
    const int low = core::hex_digit_value(text[i + 2]);
    if (high < 0 || low < 0) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

std::string percent_encode(std::string_view text) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(c);
      continue;
    }
    const auto byte = static_cast<unsigned char>(c);
    out.push_back('%');
    out.push_back(kDigits[byte >> 4]);
    out.push_back(kDigits[byte & 0x0F]);
  }
  return out;
}

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

}  // namespace lens::detail
