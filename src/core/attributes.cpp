// Rendering of attribute values (see include/lens/attributes.hpp).
#include "lens/attributes.hpp"

#include <charconv>
#include <string>

namespace lens {
namespace {

std::string render(bool value) { return value ? "true" : "false"; }
std::string render(std::int64_t value) { return std::to_string(value); }
std::string render(double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return ec == std::errc() ? std::string(buffer, end) : std::string("nan");
}
std::string render(const std::string& value) { return value; }

template <class T>
std::string render(const std::vector<T>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) {
      out += ", ";
    }
    out += render(static_cast<T>(values[i]));
  }
  return out + "]";
}

}  // namespace

std::string to_string(const AttributeValue& value) {
  return std::visit([](const auto& v) { return render(v); }, value);
}

}  // namespace lens
