// Hex encoding and decoding (see hex.hpp).
#include "core/hex.hpp"

#include <cstddef>

namespace lens::core {

void append_lower_hex(std::string& out, std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (const std::uint8_t byte : bytes) {
    out.push_back(kDigits[byte >> 4]);
    out.push_back(kDigits[byte & 0x0f]);
  }
}

int hex_digit_value(char c, bool lowercase_only) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F' && !lowercase_only) return c - 'A' + 10;
  return -1;
}

bool decode_hex(std::string_view hex, std::span<std::uint8_t> out, bool lowercase_only) noexcept {
  if (hex.size() != 2 * out.size()) return false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int high = hex_digit_value(hex[2 * i], lowercase_only);
    const int low = hex_digit_value(hex[2 * i + 1], lowercase_only);
    if (high < 0 || low < 0) return false;
    out[i] = static_cast<std::uint8_t>(high * 16 + low);
  }
  return true;
}

}  // namespace lens::core
