// `lens config --format text` (see config_text.hpp).
#include "config/config_text.hpp"

#include <algorithm>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace lens::cli {
namespace {

using Json = nlohmann::ordered_json;

// Flattens nested objects into dotted keys for the text table.
void flatten(const Json& value, const std::string& key,
             std::vector<std::pair<std::string, std::string>>& rows) {
  if (value.is_object() && !value.empty()) {
    for (const auto& [child, child_value] : value.items()) {
      flatten(child_value, key.empty() ? child : key + "." + child, rows);
    }
    return;
  }
  if (value.is_string()) {
    rows.emplace_back(key, value.get<std::string>());
  } else if (value.is_array()) {
    std::string joined;
    for (const auto& item : value) {
      joined +=
          (joined.empty() ? "" : ", ") + (item.is_string() ? item.get<std::string>() : item.dump());
    }
    rows.emplace_back(key, joined);
  } else {
    rows.emplace_back(key, value.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
}

}  // namespace

void print_text(const Json& out) {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& [key, value] : out.items()) {
    if (key != "sources" && key != "warnings") {
      flatten(value, key, rows);
    }
  }
  std::size_t width = 5;
  for (const auto& row : rows) {
    width = std::max(width, row.first.size());
  }
  const Json& sources = out["sources"];
  std::size_t value_width = 5;
  for (const auto& row : rows) {
    value_width = std::max(value_width, std::min<std::size_t>(row.second.size(), 48));
  }
  std::cout << std::left;
  std::cout.width(static_cast<std::streamsize>(width + 2));
  std::cout << "field";
  std::cout.width(static_cast<std::streamsize>(value_width + 2));
  std::cout << "value"
            << "source\n";
  for (const auto& [key, value] : rows) {
    std::cout.width(static_cast<std::streamsize>(width + 2));
    std::cout << key;
    const bool has_source = sources.contains(key);
    if (!has_source) {
      std::cout << value << "\n";
      continue;
    }
    std::cout.width(static_cast<std::streamsize>(value_width + 2));
    std::cout << value << sources[key].get<std::string>() << "\n";
  }
  for (const auto& warning : out["warnings"]) {
    std::cout << "warning: " << warning.get<std::string>() << "\n";
  }
}

}  // namespace lens::cli
