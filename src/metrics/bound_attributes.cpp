// Attribute conversions, hashing and comparison for bound instruments (see bound_attributes.hpp).
#include "metrics/bound_attributes.hpp"

#include <string_view>
#include <type_traits>
#include <variant>

namespace lens::metrics::detail {
namespace nostd = opentelemetry::nostd;

AttributeValue to_lens(const AttributeArg& value) {
  using Kind = AttributeArg::Kind;
  switch (value.kind()) {
    case Kind::kBool:
      return value.as_bool();
    case Kind::kInt64:
      return value.as_int64();
    case Kind::kUInt64:
      return static_cast<std::int64_t>(value.as_uint64());
    case Kind::kDouble:
      return value.as_double();
    case Kind::kString:
      return std::string(value.as_string());
    case Kind::kBoolArray:
      return value.as_bool_array();
    case Kind::kInt64Array:
      return value.as_int64_array();
    case Kind::kDoubleArray:
      return value.as_double_array();
    case Kind::kStringArray:
      return value.as_string_array();
    case Kind::kNull:
      break;
  }
  return AttributeValue{};
}

ApiAttributes api_attributes(const Attributes& attributes) {
  ApiAttributes out;
  out.key_values.reserve(attributes.size());
  for (const auto& [key, value] : attributes) {
    const nostd::string_view k(key.data(), key.size());
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::string>) {
            out.key_values.emplace_back(k, nostd::string_view(v.data(), v.size()));
          } else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) {
            out.key_values.emplace_back(k, nostd::span<const std::int64_t>(v.data(), v.size()));
          } else if constexpr (std::is_same_v<V, std::vector<double>>) {
            out.key_values.emplace_back(k, nostd::span<const double>(v.data(), v.size()));
          } else if constexpr (std::is_same_v<V, std::vector<bool>>) {
            auto copy = std::make_unique<bool[]>(v.size());
            for (std::size_t i = 0; i < v.size(); ++i) copy[i] = v[i];
            out.key_values.emplace_back(k, nostd::span<const bool>(copy.get(), v.size()));
            out.bools.push_back(std::move(copy));
          } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
            std::vector<nostd::string_view> views;
            for (const auto& s : v) views.emplace_back(s.data(), s.size());
            out.strings.push_back(std::move(views));
            const auto& stored = out.strings.back();
            out.key_values.emplace_back(
                k, nostd::span<const nostd::string_view>(stored.data(), stored.size()));
          } else {
            out.key_values.emplace_back(k, v);
          }
        },
        value);
  }
  return out;
}

opentelemetry::sdk::metrics::PointAttributes point_attributes(const ApiAttributes& attributes) {
  opentelemetry::sdk::metrics::PointAttributes out;
  for (const auto& [key, value] : attributes.key_values) out.SetAttribute(key, value);
  return out;
}

Attributes to_attributes(AttributeList list) {
  Attributes out;
  for (const auto& [key, value] : list) {
    if (!value.is_null()) out.insert_or_assign(std::string(key), to_lens(value));
  }
  return out;
}

}  // namespace lens::metrics::detail
