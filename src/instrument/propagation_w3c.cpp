// Strict W3C Trace Context and W3C Baggage codecs (see propagation_w3c.hpp). Written here rather
// than taken from opentelemetry-cpp's HttpTraceContext/BaggagePropagator, which accept uppercase
// hex and duplicate tracestate keys and decode baggage with form-encoding rules ("+" as space).
// Pure functions: thread-safe.
#include "instrument/propagation_w3c.hpp"

#include <algorithm>

#include "core/hex.hpp"
#include "core/parse.hpp"
#include "core/utf8.hpp"

namespace lens::propagation_detail {
namespace {

constexpr std::size_t kTraceParentSize = 55;  // "00-" + 32 + "-" + 16 + "-" + 2
constexpr std::size_t kMaxTraceStateKey = 256;
constexpr std::size_t kMaxTraceStateTenant = 241;
constexpr std::size_t kMaxTraceStateSystem = 14;
constexpr std::size_t kMaxTraceStateValue = 256;

bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }
bool is_lcalpha(char c) noexcept { return c >= 'a' && c <= 'z'; }
bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N>& bytes) noexcept {
  return std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == 0; });
}

bool is_tracestate_keychar(char c) noexcept {
  return is_lcalpha(c) || is_digit(c) || c == '_' || c == '-' || c == '*' || c == '/';
}

// keychar* after a first character accepted by `first`, size in [1, max].
template <typename First>
bool is_key_part(std::string_view part, std::size_t max, First first) noexcept {
  if (part.empty() || part.size() > max || !first(part.front())) {
    return false;
  }
  return std::all_of(part.begin() + 1, part.end(), is_tracestate_keychar);
}

bool is_tchar(char c) noexcept {
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return is_alpha(c) || is_digit(c);
  }
}

// W3C Baggage: baggage-octet = %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E.
bool is_baggage_octet(char c) noexcept {
  const auto u = static_cast<unsigned char>(c);
  return u == 0x21 || (u >= 0x23 && u <= 0x2B) || (u >= 0x2D && u <= 0x3A) ||
         (u >= 0x3C && u <= 0x5B) || (u >= 0x5D && u <= 0x7E);
}

// Calls `fn(piece)` for each ","-separated piece of `text`, in order; stops when fn returns false.
template <typename Fn>
void for_each_list_member(std::string_view text, Fn fn) {
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view piece = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (!fn(piece) || comma == std::string_view::npos) {
      return;
    }
    start = comma + 1;
  }
}

}  // namespace

std::string_view trim_ows(std::string_view text) noexcept {
  while (!text.empty() && is_ows(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && is_ows(text.back())) {
    text.remove_suffix(1);
  }
  return text;
}

std::optional<TraceParent> parse_traceparent(std::string_view value) noexcept {
  if (value.size() < kTraceParentSize || value[2] != '-' || value[35] != '-' || value[52] != '-') {
    return std::nullopt;
  }
  std::array<std::uint8_t, 1> version{};
  std::array<std::uint8_t, 1> flags{};
  TraceParent parent;
  if (!core::decode_hex(value.substr(0, 2), version, /*lowercase_only=*/true) ||
      !core::decode_hex(value.substr(3, 32), parent.trace_id, /*lowercase_only=*/true) ||
      !core::decode_hex(value.substr(36, 16), parent.span_id, /*lowercase_only=*/true) ||
      !core::decode_hex(value.substr(53, 2), flags, /*lowercase_only=*/true)) {
    return std::nullopt;
  }
  if (version[0] == 0xff) {
    return std::nullopt;
  }
  if (value.size() > kTraceParentSize) {
    // Version 00 has exactly four fields; a future version may append "-"-separated fields.
    if (version[0] == 0x00 || value[kTraceParentSize] != '-') {
      return std::nullopt;
    }
  }
  if (all_zero(parent.trace_id) || all_zero(parent.span_id)) {
    return std::nullopt;
  }
  parent.flags = flags[0];
  return parent;
}

std::string format_traceparent(const TraceParent& parent) {
  std::string out;
  out.reserve(kTraceParentSize);
  out += "00-";
  core::append_lower_hex(out, parent.trace_id);
  out.push_back('-');
  core::append_lower_hex(out, parent.span_id);
  out.push_back('-');
  core::append_lower_hex(out, std::array<std::uint8_t, 1>{parent.flags});
  return out;
}

bool is_valid_tracestate_key(std::string_view key) noexcept {
  const auto lcalpha_or_digit = [](char c) { return is_lcalpha(c) || is_digit(c); };
  const std::size_t at = key.find('@');
  if (at == std::string_view::npos) {
    // simple-key; a leading digit is allowed as in Trace Context Level 2 and opentelemetry.
    return is_key_part(key, kMaxTraceStateKey, lcalpha_or_digit);
  }
  // multi-tenant-key = tenant-id "@" system-id (a second "@" fails the keychar check).
  return is_key_part(key.substr(0, at), kMaxTraceStateTenant, lcalpha_or_digit) &&
         is_key_part(key.substr(at + 1), kMaxTraceStateSystem, is_lcalpha);
}

bool is_valid_tracestate_value(std::string_view value) noexcept {
  // value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = printable minus "," and "=".
  if (value.empty() || value.size() > kMaxTraceStateValue || value.back() == ' ') {
    return false;
  }
  return std::all_of(value.begin(), value.end(),
                     [](char c) { return c >= 0x20 && c <= 0x7e && c != ',' && c != '='; });
}

std::optional<Members> parse_tracestate(std::string_view header) {
  Members members;
  bool valid = true;
  for_each_list_member(header, [&](std::string_view piece) {
    piece = trim_ows(piece);
    if (piece.empty()) {
      return true;  // empty and whitespace-only list members are allowed
    }
    const std::size_t eq = piece.find('=');
    if (members.size() == kMaxTraceStateMembers || eq == std::string_view::npos) {
      valid = false;
      return false;
    }
    const std::string_view key = piece.substr(0, eq);
    const std::string_view value = piece.substr(eq + 1);
    const bool duplicate = std::any_of(members.begin(), members.end(),
                                       [&](const auto& member) { return member.first == key; });
    if (duplicate || !is_valid_tracestate_key(key) || !is_valid_tracestate_value(value)) {
      valid = false;
      return false;
    }
    members.emplace_back(key, value);
    return true;
  });
  if (!valid) {
    return std::nullopt;
  }
  return members;
}

bool is_token(std::string_view text) noexcept {
  return !text.empty() && std::all_of(text.begin(), text.end(), is_tchar);
}

std::optional<std::string> percent_decode(std::string_view value) {
  if (!std::all_of(value.begin(), value.end(), is_baggage_octet)) {
    return std::nullopt;
  }
  return detail::percent_decode(value);
}

Members parse_baggage(std::string_view header) {
  Members members;
  if (header.size() > kMaxBaggageBytes) {
    return members;
  }
  for_each_list_member(header, [&](std::string_view piece) {
    if (members.size() == kMaxBaggageMembers) {
      return false;
    }
    if (piece.size() > kMaxBaggageMemberBytes) {
      return true;
    }
    const std::string_view pair = piece.substr(0, piece.find(';'));  // properties dropped
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      return true;
    }
    const std::string_view key = trim_ows(pair.substr(0, eq));
    if (!is_token(key)) {
      return true;
    }
    std::optional<std::string> value = percent_decode(trim_ows(pair.substr(eq + 1)));
    if (!value || value->find('\0') != std::string::npos) {
      return true;  // opentelemetry stores values as C strings: a NUL would truncate silently
    }
    std::string text =
        core::is_valid_utf8(*value) ? std::move(*value) : core::replace_invalid_utf8(*value);
    const auto existing = std::find_if(members.begin(), members.end(),
                                       [&](const auto& member) { return member.first == key; });
    if (existing != members.end()) {
      existing->second = std::move(text);
    } else {
      members.emplace_back(key, std::move(text));
    }
    return true;
  });
  return members;
}

std::string format_baggage(const Members& members) {
  std::string out;
  std::size_t count = 0;
  for (const auto& [key, value] : members) {
    if (count == kMaxBaggageMembers) {
      break;
    }
    if (!is_token(key)) {
      continue;
    }
    const std::string member = key + "=" + detail::percent_encode(value);
    const std::size_t needed = out.size() + (out.empty() ? 0 : 1) + member.size();
    if (member.size() > kMaxBaggageMemberBytes || needed > kMaxBaggageBytes) {
      continue;
    }
    if (!out.empty()) {
      out.push_back(',');
    }
    out += member;
    ++count;
  }
  return out;
}

}  // namespace lens::propagation_detail
