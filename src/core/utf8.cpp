// UTF-8 prefixes by code point (see utf8.hpp).
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

}  // namespace lens::core
