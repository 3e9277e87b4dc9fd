// Attribute byte encoding of native span records (see attribute_codec.hpp).
#include "native/attribute_codec.hpp"

#include <opentelemetry/nostd/span.h>
#include <opentelemetry/nostd/variant.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

namespace lens::native {
namespace {

namespace otel = opentelemetry;
using OtelValue = otel::common::AttributeValue;

using codec::Type;

// Writes into a fixed buffer; remembers when something did not fit.
class FixedSink {
 public:
  FixedSink(char* out, std::size_t room) noexcept : out_(out), room_(room) {}
  void put(const void* data, std::size_t size) noexcept {
    if (!ok_ || size > room_ - used_) {
      ok_ = false;
      return;
    }
    std::memcpy(out_ + used_, data, size);
    used_ += size;
  }
  bool ok() const noexcept { return ok_; }
  std::size_t used() const noexcept { return used_; }

 private:
  char* out_;
  std::size_t room_;
  std::size_t used_ = 0;
  bool ok_ = true;
};

// Only counts: the exact size the other sinks would write.
class SizeSink {
 public:
  void put(const void*, std::size_t size) noexcept { used_ += size; }
  std::size_t used() const noexcept { return used_; }

 private:
  std::size_t used_ = 0;
};

class StringSink {
 public:
  explicit StringSink(std::string& out) noexcept : out_(out) {}
  void put(const void* data, std::size_t size) {
    out_.append(static_cast<const char*>(data), size);
  }

 private:
  std::string& out_;
};

template <class Sink, class T>
void put_value(Sink& sink, T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  sink.put(&value, sizeof(value));
}

template <class Sink>
void put_string(Sink& sink, std::string_view text) {
  // Longer strings are cut at 4 GiB (far beyond any attribute limit).
  const auto size = static_cast<std::uint32_t>(std::min<std::size_t>(text.size(), UINT32_MAX));
  put_value(sink, size);
  sink.put(text.data(), size);
}

template <class Sink>
void put_key(Sink& sink, Type type, std::string_view key) {
  put_value(sink, static_cast<std::uint8_t>(type));
  const auto size = static_cast<std::uint16_t>(std::min<std::size_t>(key.size(), UINT16_MAX));
  put_value(sink, size);
  sink.put(key.data(), size);
}

template <class Sink, class Range>
void put_array(Sink& sink, const Range& values) {
  put_value(sink, static_cast<std::uint32_t>(values.size()));
  for (const auto& v : values) {
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string> ||
                  std::is_same_v<std::decay_t<decltype(v)>, otel::nostd::string_view>) {
      put_string(sink, std::string_view(v.data(), v.size()));
    } else if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bool> ||
                         std::is_same_v<Range, std::vector<bool>>) {
      put_value(sink, static_cast<std::uint8_t>(static_cast<bool>(v) ? 1 : 0));
    } else {
      put_value(sink, v);
    }
  }
}

template <class Sink>
bool put_arg(Sink& sink, std::string_view key, const AttributeArg& value) {
  using Kind = AttributeArg::Kind;
  switch (value.kind()) {
    case Kind::kNull:
      return false;
    case Kind::kBool:
      put_key(sink, Type::kBool, key);
      put_value(sink, static_cast<std::uint8_t>(value.as_bool() ? 1 : 0));
      return true;
    case Kind::kInt64:
      put_key(sink, Type::kInt64, key);
      put_value(sink, value.as_int64());
      return true;
    case Kind::kUInt64:
      put_key(sink, Type::kUInt64, key);
      put_value(sink, value.as_uint64());
      return true;
    case Kind::kDouble:
      put_key(sink, Type::kDouble, key);
      put_value(sink, value.as_double());
      return true;
    case Kind::kString:
      put_key(sink, Type::kString, key);
      put_string(sink, value.as_string());
      return true;
    case Kind::kBoolArray:
      put_key(sink, Type::kBoolArray, key);
      put_array(sink, value.as_bool_array());
      return true;
    case Kind::kInt64Array:
      put_key(sink, Type::kInt64Array, key);
      put_array(sink, value.as_int64_array());
      return true;
    case Kind::kDoubleArray:
      put_key(sink, Type::kDoubleArray, key);
      put_array(sink, value.as_double_array());
      return true;
    case Kind::kStringArray:
      put_key(sink, Type::kStringArray, key);
      put_array(sink, value.as_string_array());
      return true;
  }
  return false;
}

// Reads the encoding back; every read is bounds-checked (a record is trusted, but a bug must
// not read past the payload).
class Reader {
 public:
  Reader(const char* data, std::size_t size) noexcept : data_(data), size_(size) {}
  bool done() const noexcept { return pos_ >= size_; }
  template <class T>
  bool get(T& out) noexcept {
    if (sizeof(T) > size_ - pos_) return fail();
    std::memcpy(&out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool get_bytes(std::size_t n, std::string_view& out) noexcept {
    if (n > size_ - pos_) return fail();
    out = std::string_view(data_ + pos_, n);
    pos_ += n;
    return true;
  }
  bool get_string(std::string_view& out) noexcept {
    std::uint32_t n = 0;
    return get(n) && get_bytes(n, out);
  }

 private:
  bool fail() noexcept {
    pos_ = size_;
    return false;
  }
  const char* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

otel::nostd::string_view view(std::string_view s) noexcept { return {s.data(), s.size()}; }

template <class T>
bool read_numbers(Reader& reader, std::vector<T>& out) {
  std::uint32_t n = 0;
  if (!reader.get(n)) return false;
  out.clear();
  for (std::uint32_t i = 0; i < n; ++i) {
    T v{};
    if (!reader.get(v)) return false;
    out.push_back(v);
  }
  return true;
}

// Decodes one attribute and calls fn(key, value); false at the end or on a malformed encoding.
template <class Fn>
bool decode_one(Reader& reader, Fn&& fn) {
  std::uint8_t type = 0;
  std::uint16_t key_size = 0;
  std::string_view key;
  if (!reader.get(type) || !reader.get(key_size) || !reader.get_bytes(key_size, key)) {
    return false;
  }
  switch (static_cast<Type>(type)) {
    case Type::kBool: {
      std::uint8_t v = 0;
      if (!reader.get(v)) return false;
      fn(view(key), OtelValue(v != 0));
      return true;
    }
    case Type::kInt64: {
      std::int64_t v = 0;
      if (!reader.get(v)) return false;
      fn(view(key), OtelValue(v));
      return true;
    }
    case Type::kUInt64: {
      std::uint64_t v = 0;
      if (!reader.get(v)) return false;
      fn(view(key), OtelValue(v));
      return true;
    }
    case Type::kDouble: {
      double v = 0;
      if (!reader.get(v)) return false;
      fn(view(key), OtelValue(v));
      return true;
    }
    case Type::kString: {
      std::string_view v;
      if (!reader.get_string(v)) return false;
      fn(view(key), OtelValue(view(v)));
      return true;
    }
    case Type::kBoolArray: {
      std::vector<std::uint8_t> raw;
      if (!read_numbers(reader, raw)) return false;
      const std::unique_ptr<bool[]> values(new bool[raw.empty() ? 1 : raw.size()]);
      for (std::size_t i = 0; i < raw.size(); ++i) values[i] = raw[i] != 0;
      fn(view(key), OtelValue(otel::nostd::span<const bool>(values.get(), raw.size())));
      return true;
    }
    case Type::kInt64Array: {
      std::vector<std::int64_t> values;
      if (!read_numbers(reader, values)) return false;
      fn(view(key), OtelValue(otel::nostd::span<const std::int64_t>(values.data(), values.size())));
      return true;
    }
    case Type::kUInt64Array: {
      std::vector<std::uint64_t> values;
      if (!read_numbers(reader, values)) return false;
      fn(view(key),
         OtelValue(otel::nostd::span<const std::uint64_t>(values.data(), values.size())));
      return true;
    }
    case Type::kDoubleArray: {
      std::vector<double> values;
      if (!read_numbers(reader, values)) return false;
      fn(view(key), OtelValue(otel::nostd::span<const double>(values.data(), values.size())));
      return true;
    }
    case Type::kStringArray: {
      std::uint32_t n = 0;
      if (!reader.get(n)) return false;
      std::vector<otel::nostd::string_view> values;
      for (std::uint32_t i = 0; i < n; ++i) {
        std::string_view s;
        if (!reader.get_string(s)) return false;
        values.push_back(view(s));
      }
      fn(view(key), OtelValue(otel::nostd::span<const otel::nostd::string_view>(values.data(),
                                                                                values.size())));
      return true;
    }
  }
  return false;
}

}  // namespace

std::size_t codec::encode_other(char* out, std::size_t room, std::string_view key,
                                const AttributeArg& value) noexcept {
  FixedSink sink(out, room);
  if (!put_arg(sink, key, value) || !sink.ok()) return 0;
  return sink.used();
}

std::size_t encoded_size(std::string_view key, const AttributeArg& value) noexcept {
  SizeSink sink;
  return put_arg(sink, key, value) ? sink.used() : 0;
}

void append_attribute(std::string& out, std::string_view key, const AttributeArg& value) {
  StringSink sink(out);
  put_arg(sink, key, value);
}

void decode_attributes(const char* data, std::size_t size, AttributeCallback callback) {
  Reader reader(data, size);
  while (!reader.done() &&
         decode_one(reader, [&](otel::nostd::string_view key, const OtelValue& value) {
           callback(key, value);
         })) {
  }
}

std::size_t count_attributes(const char* data, std::size_t size) noexcept {
  std::size_t count = 0;
  try {
    decode_attributes(data, size,
                      [&count](otel::nostd::string_view, const OtelValue&) { ++count; });
  } catch (...) {
  }
  return count;
}

bool EncodedAttributes::ForEachKeyValue(
    otel::nostd::function_ref<bool(otel::nostd::string_view, OtelValue)> callback) const noexcept {
  try {
    Reader reader(data_, size_);
    bool keep_going = true;
    while (keep_going && !reader.done() &&
           decode_one(reader, [&](otel::nostd::string_view key, const OtelValue& value) {
             keep_going = callback(key, value);
           })) {
    }
    return keep_going;
  } catch (...) {
    return false;
  }
}

}  // namespace lens::native
