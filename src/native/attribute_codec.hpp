// The byte encoding of attributes in native span records: [type u8][key size u16][key][value],
// values as 8 raw bytes (bool: 1), strings as [size u32][bytes], arrays as [count u32] then the
// elements. Encoding happens on the recording thread into the frame's payload (no allocation) or,
// when that is full, into a heap string; decoding happens on the export thread.
// Thread-safety: pure functions.
#pragma once

#include <opentelemetry/common/attribute_value.h>
#include <opentelemetry/common/key_value_iterable.h>
#include <opentelemetry/nostd/function_ref.h>
#include <opentelemetry/nostd/string_view.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "lens/span.hpp"

namespace lens::native {

namespace codec {

enum class Type : std::uint8_t {
  kBool = 1,
  kInt64,
  kUInt64,
  kDouble,
  kString,
  kBoolArray,
  kInt64Array,
  kUInt64Array,
  kDoubleArray,
  kStringArray,
};

// Arrays and anything unusual (out of line).
std::size_t encode_other(char* out, std::size_t room, std::string_view key,
                         const AttributeArg& value) noexcept;

// memcpy for the short strings of a span (names, keys, small values) without a library call:
// fixed-size, possibly overlapping moves.
[[gnu::always_inline]] inline void copy_short(char* out, const char* in, std::size_t n) noexcept {
  if (n >= 16) {
    if (n > 32) {
      std::memcpy(out, in, n);
      return;
    }
    std::memcpy(out, in, 16);
    std::memcpy(out + n - 16, in + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(out, in, 8);
    std::memcpy(out + n - 8, in + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(out, in, 4);
    std::memcpy(out + n - 4, in + n - 4, 4);
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = in[i];
  }
}

[[gnu::always_inline]] inline std::size_t put_head(char* out, Type type,
                                                   std::string_view key) noexcept {
  out[0] = static_cast<char>(type);
  const auto size = static_cast<std::uint16_t>(key.size());
  std::memcpy(out + 1, &size, sizeof(size));
  copy_short(out + 3, key.data(), key.size());
  return 3 + key.size();
}

}  // namespace codec

// Writes one attribute into [out, out + room); returns the bytes written, or 0 (nothing written)
// when it does not fit. A null value writes nothing and returns 0. Scalars and strings inline:
// this runs on the recording thread for every attribute.
[[gnu::always_inline]] inline std::size_t encode_attribute(char* out, std::size_t room,
                                                           std::string_view key,
                                                           const AttributeArg& value) noexcept {
  using Kind = AttributeArg::Kind;
  if (key.size() > 0xFFFF) return codec::encode_other(out, room, key, value);
  const std::size_t head = 3 + key.size();
  switch (value.kind()) {
    case Kind::kInt64: {
      if (head + 8 > room) return 0;
      const std::int64_t v = value.as_int64();
      std::memcpy(out + codec::put_head(out, codec::Type::kInt64, key), &v, 8);
      return head + 8;
    }
    case Kind::kDouble: {
      if (head + 8 > room) return 0;
      const double v = value.as_double();
      std::memcpy(out + codec::put_head(out, codec::Type::kDouble, key), &v, 8);
      return head + 8;
    }
    case Kind::kBool: {
      if (head + 1 > room) return 0;
      out[codec::put_head(out, codec::Type::kBool, key)] = value.as_bool() ? 1 : 0;
      return head + 1;
    }
    case Kind::kString: {
      const std::string_view v = value.as_string();
      if (v.size() > 0xFFFFFFFFU || head + 4 + v.size() > room) return 0;
      char* p = out + codec::put_head(out, codec::Type::kString, key);
      const auto size = static_cast<std::uint32_t>(v.size());
      std::memcpy(p, &size, 4);
      codec::copy_short(p + 4, v.data(), v.size());
      return head + 4 + v.size();
    }
    case Kind::kNull:
      return 0;
    default:
      return codec::encode_other(out, room, key, value);
  }
}

// The bytes encode_attribute and append_attribute write for one attribute (0 for a null value).
std::size_t encoded_size(std::string_view key, const AttributeArg& value) noexcept;

// Appends one attribute (may throw std::bad_alloc). A null value appends nothing.
void append_attribute(std::string& out, std::string_view key, const AttributeArg& value);

using AttributeCallback = opentelemetry::nostd::function_ref<void(
    opentelemetry::nostd::string_view, const opentelemetry::common::AttributeValue&)>;

// Calls `callback` for each encoded attribute in [data, data + size), in order. Arrays are
// passed as spans over temporary copies that live through the call.
void decode_attributes(const char* data, std::size_t size, AttributeCallback callback);

// The number of attributes encoded in [data, data + size).
std::size_t count_attributes(const char* data, std::size_t size) noexcept;

// No attributes, through opentelemetry-cpp's iterable interface.
class NoAttributes final : public opentelemetry::common::KeyValueIterable {
 public:
  bool ForEachKeyValue(
      opentelemetry::nostd::function_ref<bool(opentelemetry::nostd::string_view,
                                              opentelemetry::common::AttributeValue)>)
      const noexcept override {
    return true;
  }
  std::size_t size() const noexcept override { return 0; }
};

// Encoded attributes seen through opentelemetry-cpp's iterable interface (for event attributes).
class EncodedAttributes final : public opentelemetry::common::KeyValueIterable {
 public:
  EncodedAttributes(const char* data, std::size_t size) noexcept : data_(data), size_(size) {}
  bool ForEachKeyValue(
      opentelemetry::nostd::function_ref<bool(opentelemetry::nostd::string_view,
                                              opentelemetry::common::AttributeValue)>
          callback) const noexcept override;
  std::size_t size() const noexcept override { return count_attributes(data_, size_); }

 private:
  const char* data_;
  std::size_t size_;
};

}  // namespace lens::native
