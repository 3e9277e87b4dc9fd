// UTF-8 prefixes by code point, validation and repair (see utf8.hpp).
#include "core/utf8.hpp"

namespace lens::core {

std::size_t utf8_prefix_bytes(std::string_view text, std::size_t max_chars) noexcept {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if ((byte & 0xC0) != 0x80) {  // first byte of a code point
      if (chars == max_chars) return i;
      ++chars;
    }
  }
  return text.size();
}

namespace {

// Length of the well-formed UTF-8 sequence at the start of `bytes` (non-empty), or 0.
std::size_t utf8_sequence_length(std::string_view bytes) noexcept {
  const auto lead = static_cast<unsigned char>(bytes[0]);
  if (lead < 0x80) {
    return 1;
  }
  std::size_t length = 0;
  unsigned char low = 0x80;  // bounds of the second byte (Unicode Table 3-7)
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) {
      low = 0xA0;
    } else if (lead == 0xED) {
      high = 0x9F;
    }
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) {
      low = 0x90;
    } else if (lead == 0xF4) {
      high = 0x8F;
    }
  } else {
    return 0;
  }
  if (bytes.size() < length) {
    return 0;
  }
  const auto second = static_cast<unsigned char>(bytes[1]);
  if (second < low || second > high) {
    return 0;
  }
  for (std::size_t i = 2; i < length; ++i) {
    const auto next = static_cast<unsigned char>(bytes[i]);
    if (next < 0x80 || next > 0xBF) {
      return 0;
    }
  }
  return length;
}

}  // namespace

bool is_valid_utf8(std::string_view bytes) noexcept {
  while (!bytes.empty()) {
    const std::size_t length = utf8_sequence_length(bytes);
    if (length == 0) {
      return false;
    }
    bytes.remove_prefix(length);
  }
  return true;
}

std::string replace_invalid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  while (!bytes.empty()) {
    std::size_t length = utf8_sequence_length(bytes);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      length = 1;
    } else {
      out.append(bytes.substr(0, length));
    }
    bytes.remove_prefix(length);
  }
  return out;
}

}  // namespace lens::core
