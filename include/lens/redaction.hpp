// The attribute keys whose string values lens exports as "[REDACTED]" (docs/security.md): the one
// definition read by lens::redact_value, the native span path (src/native/) and the Python binding.
// Constant data and pure functions, with no dependency beyond the standard library: any thread.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace lens {

inline constexpr std::string_view kRedacted = "[REDACTED]";

// Matched exactly and case-sensitively, by key, never by content.
inline constexpr std::array<std::string_view, 8> kDefaultRedactKeys = {
    "prompt", "input_text", "output_text", "text", "password", "token", "secret", "key"};

// Bit n is set when a key of kDefaultRedactKeys has n characters.
inline constexpr std::uint64_t kDefaultRedactKeyLengths = [] {
  std::uint64_t lengths = 0;
  for (const std::string_view key : kDefaultRedactKeys) lengths |= std::uint64_t{1} << key.size();
  return lengths;
}();
static_assert([] {
  for (const std::string_view key : kDefaultRedactKeys) {
    if (key.size() >= 64) return false;
  }
  return true;
}());

// Whether `key` is one of kDefaultRedactKeys; builds no string (the span hot path calls it): a
// key of no listed length is rejected by one bit test, the others compared.
constexpr bool is_default_redact_key(std::string_view key) noexcept {
  if (key.size() >= 64 || ((kDefaultRedactKeyLengths >> key.size()) & 1U) == 0) return false;
  for (const std::string_view redacted : kDefaultRedactKeys) {
    if (key == redacted) return true;
  }
  return false;
}

// kDefaultRedactKeys as a set, the default of redact_value's and safe_set_span_attributes's keys.
inline const std::set<std::string>& default_redact_keys() {
  static const std::set<std::string> keys(kDefaultRedactKeys.begin(), kDefaultRedactKeys.end());
  return keys;
}

}  // namespace lens
