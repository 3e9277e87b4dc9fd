// Shared console JSON helpers (see console_json.hpp).
#include "export/console_json.hpp"

#include <cstdio>
#include <ctime>
#include <type_traits>
#include <vector>

namespace lens::exporters::console_json {

std::string hex_id(opentelemetry::nostd::span<const std::uint8_t> id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "0x";
  for (std::uint8_t byte : id) {
    out.push_back(kDigits[byte >> 4]);
    out.push_back(kDigits[byte & 0xf]);
  }
  return out;
}

std::string iso8601(std::chrono::nanoseconds since_epoch) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since_epoch).count();
  const std::time_t seconds = static_cast<std::time_t>(micros / 1000000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long long>(micros % 1000000));
  return buffer;
}

Json value(const opentelemetry::sdk::common::OwnedAttributeValue& v) {
  return opentelemetry::nostd::visit(
      [](const auto& x) -> Json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<std::uint8_t>>) {
          return Json(std::vector<unsigned>(x.begin(), x.end()));
        } else {
          return Json(x);
        }
      },
      v);
}

Json resource(const opentelemetry::sdk::resource::Resource& r) {
  return Json{{"attributes", attributes(r.GetAttributes())}, {"schema_url", r.GetSchemaURL()}};
}

}  // namespace lens::exporters::console_json
