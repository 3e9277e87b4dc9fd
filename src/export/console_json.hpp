// JSON pieces shared by the console span, metric and log exporters: ids as "0x"+hex, timestamps as
// UTC ISO-8601 with microseconds, attribute values and maps (keys sorted, so a line never
// depends on hashing), and the resource object of SPEC Part 2 §G.2. Stateless.
#pragma once

#include <opentelemetry/common/attribute_value.h>
#include <opentelemetry/nostd/span.h>
#include <opentelemetry/sdk/common/attribute_utils.h>
#include <opentelemetry/sdk/resource/resource.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace lens::exporters::console_json {

using Json = nlohmann::ordered_json;

// "0x" followed by the id's bytes in lowercase hex.
std::string hex_id(opentelemetry::nostd::span<const std::uint8_t> id);

// 2026-08-12T10:11:12.123456Z
std::string iso8601(std::chrono::nanoseconds since_epoch);

Json value(const opentelemetry::sdk::common::OwnedAttributeValue& value);

// Any map of string keys to owned values, as an object with sorted keys.
template <class Map>
Json attributes(const Map& map) {
  std::map<std::string, Json> sorted;
  for (const auto& [key, v] : map) {
    sorted.emplace(key, value(v));
  }
  Json out = Json::object();
  for (auto& [key, v] : sorted) {
    out[key] = std::move(v);
  }
  return out;
}

// {"attributes": {...}, "schema_url": "..."}
Json resource(const opentelemetry::sdk::resource::Resource& resource);

}  // namespace lens::exporters::console_json
