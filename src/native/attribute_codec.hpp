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
#include <string>
#include <string_view>

#include "lens/span.hpp"

namespace lens::native {

// Writes one attribute into [out, out + room); returns the bytes written, or 0 (nothing written)
// when it does not fit. A null value writes nothing and returns 0.
std::size_t encode_attribute(char* out, std::size_t room, std::string_view key,
                             const AttributeArg& value) noexcept;

// Appends one attribute (may throw std::bad_alloc). A null value appends nothing.
void append_attribute(std::string& out, std::string_view key, const AttributeArg& value);
void append_attribute(std::string& out, std::string_view key,
                      const opentelemetry::common::AttributeValue& value);

using AttributeCallback = opentelemetry::nostd::function_ref<void(
    opentelemetry::nostd::string_view, const opentelemetry::common::AttributeValue&)>;

// Calls `callback` for each encoded attribute in [data, data + size), in order. Arrays are
// passed as spans over temporary copies that live through the call.
void decode_attributes(const char* data, std::size_t size, AttributeCallback callback);

// The number of attributes encoded in [data, data + size).
std::size_t count_attributes(const char* data, std::size_t size) noexcept;

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
