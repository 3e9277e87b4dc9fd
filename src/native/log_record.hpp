// A finished log record of the native log path, as it waits in its thread's ring: this header,
// then the event name, the body and the encoded attributes (attribute_codec.hpp), padded to 8.
// A record whose variable part would make it larger than kMaxInlineLogBytes keeps that part in a
// heap LogExtras instead (owned by the record; the export thread deletes it), so one huge body
// never takes a chunk for itself. Thread-safety: written by the owner thread before its commit,
// read by the export thread after.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace lens::native {

inline constexpr std::size_t kMaxInlineLogBytes = 8192;

struct LogExtras {
  std::string event_name;
  std::string body;
  std::string attributes;  // attribute_codec encoding
};

struct LogRecordHeader {
  std::uint32_t size = 0;  // header + inline part + padding
  std::uint8_t severity = 0;
  std::uint8_t trace_flags = 0;  // W3C flags of the span it belongs to (sampled bit)
  bool has_span = false;
  std::uint16_t event_name_size = 0;  // inline sizes (0 when `extras` holds the part)
  std::uint32_t body_size = 0;
  std::uint32_t attributes_size = 0;
  std::uint64_t ticks = 0;  // native::read_ticks() at emit
  std::array<std::uint8_t, 16> trace_id{};
  std::uint64_t span_id = 0;  // big-endian value of the 8 id bytes
  LogExtras* extras = nullptr;
};
static_assert(sizeof(LogRecordHeader) % 8 == 0);

inline constexpr std::size_t log_record_size(std::size_t inline_bytes) noexcept {
  return (sizeof(LogRecordHeader) + inline_bytes + 7) & ~std::size_t{7};
}

}  // namespace lens::native
