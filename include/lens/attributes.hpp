// Typed attribute values and ordered attribute maps, shared by resources, spans and the
// `lens config` output. An ordered map keeps every printed form deterministic.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace lens {

using AttributeValue =
    std::variant<bool, std::int64_t, double, std::string, std::vector<bool>,
                 std::vector<std::int64_t>, std::vector<double>, std::vector<std::string>>;

using Attributes = std::map<std::string, AttributeValue, std::less<>>;

// Human-readable rendering: strings verbatim, numbers in shortest round-trip form,
// booleans as true/false, arrays as [a, b].
std::string to_string(const AttributeValue& value);

}  // namespace lens
