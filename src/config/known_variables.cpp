// The table of variables lens reads and the unknown-variable check (lens/known_variables.hpp).
#include "lens/known_variables.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

#include "config/edit_distance.hpp"
#include "core/parse.hpp"

namespace lens {
namespace {

constexpr std::string_view kOtel = "OTEL_";

// Language SDKs' own variables: other processes' business, never reported.
constexpr std::array<std::string_view, 10> kLanguageSdkPrefixes = {
    "OTEL_PYTHON_", "OTEL_JAVA_", "OTEL_JAVAAGENT_", "OTEL_INSTRUMENTATION_",
    "OTEL_DOTNET_", "OTEL_NODE_", "OTEL_GO_",        "OTEL_RUBY_",
    "OTEL_PHP_",    "OTEL_RUST_"};

bool starts_with(std::string_view text, std::string_view start) {
  return text.substr(0, start.size()) == start;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

template <class Names>
bool contains(const Names& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string unread_message(const std::string& name, const std::optional<std::string>& closest) {
  std::string message = name + " is set but nothing reads it";
  if (closest) return message + "; did you mean " + *closest + "?";
  return message + "; the variables lens reads are listed in docs/configuration.md";
}

}  // namespace

const std::vector<std::string_view>& known_prefixed_keys() {
  // Read by Config::from_env (src/config/config.cpp), in its order (CONSOLE_FORMAT after
  // EXPORTER).
  static const std::vector<std::string_view> keys = {
      "ENABLED",         "RANK_STRATEGY",      "EXPORT_STRATEGY",
      "EXPORT_RANK",     "EXPORT_SAMPLE_RATE", "SAMPLING_STRATEGY",
      "SAMPLER_ENABLED", "TRACES_ENABLED",     "METRICS_ENABLED",
      "LOGS_ENABLED",    "SPAN_GROUPS",        "EXPORTER",
      "FILE_PATH",       "SPAN_BUFFER_MB",     "RUN_ID",
      "USER_ID",         "CONSOLE_FORMAT",     "HANG_TIMEOUT",
      "HANG_STARTUP_TIMEOUT"};
  return keys;
}

const std::vector<std::string>& known_otel_variables() {
  static const std::vector<std::string> names = [] {
    // Read by OtelSettings::from_env (src/config/otel_settings.cpp), in its order.
    std::vector<std::string> out = {"OTEL_SDK_DISABLED",        "OTEL_SERVICE_NAME",
                                    "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER",
                                    "OTEL_TRACES_SAMPLER_ARG",  "OTEL_PROPAGATORS"};
    for (std::string_view signal : {"", "TRACES_", "METRICS_", "LOGS_"}) {
      for (std::string_view key : {"PROTOCOL", "ENDPOINT", "HEADERS", "TIMEOUT", "COMPRESSION",
                                   "CERTIFICATE", "CLIENT_KEY", "CLIENT_CERTIFICATE", "INSECURE"}) {
        out.push_back("OTEL_EXPORTER_OTLP_" + std::string(signal) + std::string(key));
      }
    }
    out.emplace_back("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE");
    for (std::string_view processor : {"OTEL_BSP_", "OTEL_BLRP_"}) {
      for (std::string_view key :
           {"SCHEDULE_DELAY", "EXPORT_TIMEOUT", "MAX_QUEUE_SIZE", "MAX_EXPORT_BATCH_SIZE"}) {
        out.push_back(std::string(processor) + std::string(key));
      }
    }
    for (std::string_view name :
         {"OTEL_METRIC_EXPORT_INTERVAL", "OTEL_METRIC_EXPORT_TIMEOUT",
          "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_COUNT_LIMIT",
          "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT",
          "OTEL_SPAN_EVENT_COUNT_LIMIT", "OTEL_SPAN_LINK_COUNT_LIMIT",
          "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT",
          "OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT"}) {
      out.emplace_back(name);
    }
    // The metric exporters and the Prometheus pull endpoint (docs/exporters.md).
    for (std::string_view name : {"OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_PROMETHEUS_HOST",
                                  "OTEL_EXPORTER_PROMETHEUS_PORT"}) {
      out.emplace_back(name);
    }
    return out;
  }();
  return names;
}

const std::vector<std::string_view>& unread_standard_otel_variables() {
  // From the specification's "Environment Variable Specification" and "OTLP Exporter
  // Configuration": general SDK settings lens has its own equivalent of, or none.
  static const std::vector<std::string_view> names = {
      "OTEL_LOG_LEVEL",
      "OTEL_TRACES_EXPORTER",
      "OTEL_LOGS_EXPORTER",
      "OTEL_METRICS_EXEMPLAR_FILTER",
      "OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION",
      "OTEL_EXPORTER_ZIPKIN_ENDPOINT",
      "OTEL_EXPORTER_ZIPKIN_TIMEOUT",
      "OTEL_EXPORTER_JAEGER_AGENT_HOST",
      "OTEL_EXPORTER_JAEGER_AGENT_PORT",
      "OTEL_EXPORTER_JAEGER_ENDPOINT",
      "OTEL_EXPORTER_JAEGER_TIMEOUT",
      "OTEL_EXPORTER_JAEGER_USER",
      "OTEL_EXPORTER_JAEGER_PASSWORD",
      "OTEL_EXPERIMENTAL_CONFIG_FILE",
      "OTEL_CONFIG_FILE",
      "OTEL_SEMCONV_STABILITY_OPT_IN"};
  return names;
}

std::optional<std::string> closest_name(std::string_view name,
                                        const std::vector<std::string>& candidates) {
  const std::string wanted = upper(name);
  const std::size_t allowed = wanted.size() <= 7 ? 1 : wanted.size() <= 11 ? 2 : 3;
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = detail::edit_distance(wanted, upper(candidate));
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::vector<std::string> unknown_variable_warnings(const Env& env, std::string_view prefix,
                                                   std::string_view fallback_prefix) {
  std::vector<std::string> prefixes;
  for (std::string_view p : {prefix, fallback_prefix}) {
    if (!p.empty()) prefixes.push_back(std::string(p) + "_");
  }
  const std::vector<std::string>& otel_read = known_otel_variables();
  std::vector<std::string> otel_candidates = otel_read;
  for (std::string_view name : unread_standard_otel_variables()) otel_candidates.emplace_back(name);

  std::vector<std::string> warnings;
  for (const auto& entry : env.snapshot()) {
    const std::string& name = entry.first;
    bool reported = false;
    for (const std::string& p : prefixes) {
      if (reported || !starts_with(name, p)) continue;
      const std::string_view key = std::string_view(name).substr(p.size());
      if (contains(known_prefixed_keys(), key)) {
        reported = true;  // read: nothing to say
        continue;
      }
      std::vector<std::string> keys;
      for (std::string_view known : known_prefixed_keys()) keys.emplace_back(known);
      const auto closest = closest_name(key, keys);
      warnings.push_back(
          unread_message(name, closest ? std::optional(p + *closest) : std::nullopt));
      reported = true;
    }
    if (reported || !starts_with(name, kOtel) || contains(otel_read, name)) continue;
    const bool language_sdk =
        std::any_of(kLanguageSdkPrefixes.begin(), kLanguageSdkPrefixes.end(),
                    [&](std::string_view sdk_prefix) { return starts_with(name, sdk_prefix); });
    if (language_sdk) continue;
    if (contains(unread_standard_otel_variables(), name)) {
      warnings.push_back(name +
                         " is an OpenTelemetry variable that lens does not read (another "
                         "OpenTelemetry SDK in this job may); see docs/configuration.md");
      continue;
    }
    const auto closest = closest_name(name, otel_candidates);
    warnings.push_back(unread_message(name, closest));
  }
  return warnings;
}

}  // namespace lens
