// Attribute look-ups on the report's model (see run_model.hpp).
#include "report/run_model.hpp"

#include <charconv>
#include <cmath>

namespace lens::report {

const nlohmann::json* find_attribute(const AttributeList& attributes, const std::string& key) {
  for (const auto& [name, value] : attributes) {
    if (name == key) return &value;
  }
  return nullptr;
}

std::optional<std::int64_t> int_attribute(const AttributeList& attributes, const std::string& key) {
  const nlohmann::json* value = find_attribute(attributes, key);
  if (value == nullptr) return std::nullopt;
  if (value->is_number_integer()) return value->get<std::int64_t>();
  if (value->is_number_float()) {
    const double d = value->get<double>();
    // Integral and inside int64's range (2^63 is exactly representable as a double).
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2233720368547758e18) {
      return static_cast<std::int64_t>(d);
    }
    return std::nullopt;
  }
  if (value->is_string()) {
    const std::string& text = value->get_ref<const std::string&>();
    std::int64_t parsed = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, parsed);
    if (!text.empty() && ec == std::errc() && ptr == end) return parsed;
  }
  return std::nullopt;
}

std::string text_attribute(const AttributeList& attributes, const std::string& key) {
  const nlohmann::json* value = find_attribute(attributes, key);
  if (value == nullptr) return {};
  if (value->is_string()) return value->get<std::string>();
  return value->dump();
}

}  // namespace lens::report
