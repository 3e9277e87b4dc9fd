// Fuzz target: the two key=value list variables, OTEL_EXPORTER_OTLP_[SIGNAL_]HEADERS (secret
// values) and OTEL_RESOURCE_ATTRIBUTES (percent-decoded values), through OtelSettings, validation,
// the resource and its re-encoding for child processes.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "fixed_host.hpp"
#include "fuzz_input.hpp"
#include "lens/config.hpp"
#include "lens/env.hpp"
#include "lens/otel_settings.hpp"
#include "lens/rank_info.hpp"
#include "lens/resource.hpp"
#include "lens/validate.hpp"

namespace {

constexpr std::string_view kVariables[] = {
    "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
    "OTEL_RESOURCE_ATTRIBUTES"};
constexpr std::size_t kVariableCount = sizeof(kVariables) / sizeof(kVariables[0]);

// A header value no message may ever show, planted in front of the fuzzed headers.
constexpr std::string_view kCanary = "Zq9CanaryHeaderSecret7w";

void check_no_canary(const std::string& text, std::string_view where) {
  if (text.find(kCanary) != std::string::npos) {
    lens::fuzz::fail("a header value appears in " + std::string(where) + ": " + text);
  }
}

// Whatever the resource holds, encoding it for a child process and parsing that again gives the
// same string attributes back (when the inherited variable itself parsed cleanly).
void check_round_trip(const lens::Attributes& resource, const lens::Env& env) {
  const std::string encoded = lens::encode_resource_attributes(resource, env);
  const lens::OtelSettings again =
      lens::OtelSettings::from_env(lens::Env::from({{"OTEL_RESOURCE_ATTRIBUTES", encoded}}));
  if (!again.problems.empty()) {
    lens::fuzz::fail("encode_resource_attributes made '" + encoded +
                     "', which does not parse: " + again.problems.front().message());
  }
  std::map<std::string, std::string> parsed;
  for (const auto& [key, value] : again.resource_attributes.value) {
    parsed[key] = value;
  }
  for (const auto& [key, value] : resource) {
    const auto* text = std::get_if<std::string>(&value);
    if (text == nullptr || key.find_first_of(",=") != std::string::npos ||
        key.find_first_not_of(" \t") == std::string::npos) {
      continue;  // not encodable as a string (documented): skipped, not lost
    }
    const auto it = parsed.find(key);
    if (it == parsed.end() || it->second != *text) {
      lens::fuzz::fail("resource attribute '" + key + "' does not survive '" + encoded + "'");
    }
  }
}

}  // namespace

// Input: byte 0 picks the variable (kVariables[b % 5]) and, when b / 5 is odd, plants a canary
// header in front of the value; the rest is the value.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  static const lens::fuzz::FixedHost host;
  const std::size_t which = data[0] % kVariableCount;
  const bool headers = which != kVariableCount - 1;
  const bool plant = headers && (data[0] / kVariableCount) % 2 == 1;
  const std::string_view fuzzed = lens::fuzz::as_text(data + 1, size - 1);
  if (plant && fuzzed.find(kCanary) != std::string_view::npos) {
    return 0;  // the input names the canary itself; nothing to learn
  }
  std::string value(fuzzed);
  if (plant) {
    value = "authorization=Bearer%20" + std::string(kCanary) + "," + value;
  }
  const lens::Env env =
      lens::Env::from({{std::string(kVariables[which]), value}, {"NEMO_LENS_ENABLED", "1"}});

  const lens::OtelSettings settings = lens::OtelSettings::from_env(env);
  auto config = lens::Config::from_env(lens::kDefaultPrefix, {}, env);
  if (!config.ok()) {
    lens::fuzz::fail("NEMO_LENS_ENABLED=1 did not parse: " + config.message());
  }
  const lens::RankInfo rank;
  const lens::Status valid = lens::validate(*config, &rank);
  if (plant) {
    for (const lens::Error& problem : settings.problems) {
      check_no_canary(problem.message(), "a problem");
    }
    check_no_canary(valid.message(), "the validation error");
  }
  const lens::Attributes resource = lens::build_resource(*config, rank, {}, env, host);
  if (!headers && settings.problems.empty()) {
    check_round_trip(resource, env);
  }
  return 0;
}
