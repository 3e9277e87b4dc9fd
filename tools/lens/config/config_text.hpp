// `lens config --format text`: the configuration as an aligned table of dotted fields, values
// and sources, then the warnings. Writes to std::cout.
#pragma once

#include <nlohmann/json.hpp>

namespace lens::cli {

// `out` is what config_json returns.
void print_text(const nlohmann::ordered_json& out);

}  // namespace lens::cli
