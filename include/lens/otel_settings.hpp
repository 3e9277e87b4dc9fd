// The standard OpenTelemetry environment variables, parsed into typed settings in one place
// (OpenTelemetry specification, "Environment Variable Specification" and "OTLP Exporter
// Configuration"). Defaults follow the specification except OTEL_METRIC_EXPORT_INTERVAL,
// whose lens default is 10000 ms (docs/metrics.md, "What setup builds").
//
// Malformed values are recorded as problems (reported by lens::validate for an enabled
// config); the affected setting keeps its default. Value type.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lens/env.hpp"
#include "lens/result.hpp"

namespace lens {

enum class Signal { traces, metrics, logs };
std::string_view to_string(Signal signal);

enum class OtlpProtocol { grpc, http_protobuf, http_json };
std::string_view to_string(OtlpProtocol protocol);  // "grpc", "http/protobuf", "http/json"

enum class SamplerKind {
  always_on,
  always_off,
  traceidratio,
  parentbased_always_on,
  parentbased_always_off,
  parentbased_traceidratio,
};
// The OTEL_TRACES_SAMPLER names, in SamplerKind's order: the one table that to_string,
// parse_sampler_kind, the OTEL_TRACES_SAMPLER parser and kAcceptedSamplers read.
inline constexpr std::array<std::string_view, 6> kSamplerKindNames = {"always_on",
                                                                      "always_off",
                                                                      "traceidratio",
                                                                      "parentbased_always_on",
                                                                      "parentbased_always_off",
                                                                      "parentbased_traceidratio"};
std::string_view to_string(SamplerKind kind);
// The kind whose name `name` is, exactly (lower case; OTEL_TRACES_SAMPLER's parser lowers the
// variable's value first); nullopt for any other text.
std::optional<SamplerKind> parse_sampler_kind(std::string_view name);

enum class TemporalityPreference { cumulative, delta, lowmemory };
std::string_view to_string(TemporalityPreference preference);

// One entry of OTEL_METRICS_EXPORTER: push over OTLP, serve a Prometheus scrape endpoint (pull),
// print on stdout, or nothing.
enum class MetricsExporter { otlp, prometheus, console, none };
std::string_view to_string(MetricsExporter exporter);

// A setting's value together with the variable it came from ("" = default).
template <class T>
struct Sourced {
  T value{};
  std::string source;  // "env:NAME" or "default"
};

// One header of OTEL_EXPORTER_OTLP_*HEADERS. Values are secrets: never print them.
struct OtlpHeader {
  std::string key;
  std::string value;
};

// The OTLP exporter settings that apply to one signal, after the per-signal variable,
// the general variable and the default have been considered (per-signal wins).
struct OtlpSignalSettings {
  Sourced<OtlpProtocol> protocol{OtlpProtocol::grpc, "default"};
  // Final URL: per-signal endpoint verbatim; general endpoint with "v1/<signal>" appended for
  // HTTP protocols; defaults http://localhost:4317 (gRPC) / http://localhost:4318/v1/<signal>.
  Sourced<std::string> endpoint;
  Sourced<std::vector<OtlpHeader>> headers{{}, "default"};
  Sourced<std::int64_t> timeout_ms{10000, "default"};
  Sourced<std::string> compression{"none", "default"};  // "gzip" or "none"
  Sourced<std::string> certificate{"", "default"};
  Sourced<std::string> client_key{"", "default"};
  Sourced<std::string> client_certificate{"", "default"};
  Sourced<bool> insecure{false, "default"};
};

struct BatchProcessorSettings {
  Sourced<std::int64_t> schedule_delay_ms;
  Sourced<std::int64_t> export_timeout_ms;
  Sourced<std::int64_t> max_queue_size;
  Sourced<std::int64_t> max_export_batch_size;
};

// Limits; nullopt = no limit.
struct LimitSettings {
  Sourced<std::optional<std::int64_t>> attribute_value_length{std::nullopt, "default"};
  Sourced<std::int64_t> attribute_count{128, "default"};
  Sourced<std::optional<std::int64_t>> span_attribute_value_length{std::nullopt, "default"};
  Sourced<std::int64_t> span_attribute_count{128, "default"};
  Sourced<std::int64_t> span_event_count{128, "default"};
  Sourced<std::int64_t> span_link_count{128, "default"};
  Sourced<std::int64_t> event_attribute_count{128, "default"};
  Sourced<std::int64_t> link_attribute_count{128, "default"};
  Sourced<std::optional<std::int64_t>> logrecord_attribute_value_length{std::nullopt, "default"};
  Sourced<std::int64_t> logrecord_attribute_count{128, "default"};
};

struct OtelSettings {
  Sourced<bool> sdk_disabled{false, "default"};
  // OTEL_SERVICE_NAME, trimmed; empty when unset or blank.
  Sourced<std::string> service_name{"", "default"};
  // OTEL_RESOURCE_ATTRIBUTES in order, keys trimmed, values percent-decoded.
  Sourced<std::vector<std::pair<std::string, std::string>>> resource_attributes{{}, "default"};
  Sourced<SamplerKind> traces_sampler{SamplerKind::parentbased_always_on, "default"};
  // OTEL_TRACES_SAMPLER_ARG; for the ratio samplers, defaults to 1.0 when unset.
  Sourced<std::optional<double>> traces_sampler_arg{std::nullopt, "default"};
  Sourced<std::vector<std::string>> propagators{{"tracecontext", "baggage"}, "default"};

  OtlpSignalSettings traces;
  OtlpSignalSettings metrics;
  OtlpSignalSettings logs;
  Sourced<TemporalityPreference> metrics_temporality{TemporalityPreference::cumulative, "default"};

  BatchProcessorSettings bsp{
      {5000, "default"}, {30000, "default"}, {2048, "default"}, {512, "default"}};
  BatchProcessorSettings blrp{
      {1000, "default"}, {30000, "default"}, {2048, "default"}, {512, "default"}};
  Sourced<std::int64_t> metric_export_interval_ms{10000, "default"};
  Sourced<std::int64_t> metric_export_timeout_ms{30000, "default"};
  // OTEL_METRICS_EXPORTER, in order without repeats; empty when unset: the metrics then go where
  // the lens EXPORTER sends every signal. At most one of otlp and console; none stands alone.
  Sourced<std::vector<MetricsExporter>> metrics_exporters{{}, "default"};
  // The Prometheus endpoint's address. Each rank listens on the port plus its local rank; port 0
  // asks the system for a free port.
  Sourced<std::string> prometheus_host{"localhost", "default"};
  Sourced<std::int64_t> prometheus_port{9464, "default"};
  LimitSettings limits;

  // Malformed values, in the order read.
  std::vector<Error> problems;

  const OtlpSignalSettings& signal(Signal s) const;
  // The ratio the selected sampler uses (1.0 when no argument was given).
  double sampler_ratio() const;

  static OtelSettings from_env(const Env& env = Env::process());
};

namespace detail {
// The names of `Names` (an array of string_view) joined by ", ", built at compile time.
template <const auto& Names>
struct JoinedNames {
  static constexpr std::size_t size = [] {
    std::size_t n = 0;
    for (std::string_view name : Names) n += (n == 0 ? 0 : 2) + name.size();
    return n;
  }();
  static constexpr std::array<char, size> chars = [] {
    std::array<char, size> out{};
    std::size_t i = 0;
    for (std::string_view name : Names) {
      if (i != 0) {
        out[i++] = ',';
        out[i++] = ' ';
      }
      for (char c : name) out[i++] = c;
    }
    return out;
  }();
  static constexpr std::string_view view{chars.data(), size};
};
}  // namespace detail

// Accepted spellings, for error messages and documentation.
inline constexpr std::string_view kAcceptedProtocols = "grpc, http/protobuf, http/json";
// "always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off,
// parentbased_traceidratio"
inline constexpr std::string_view kAcceptedSamplers = detail::JoinedNames<kSamplerKindNames>::view;
inline constexpr std::string_view kAcceptedMetricsExporters =
    "otlp, prometheus, console, none, or a comma-separated list such as otlp,prometheus";
inline constexpr std::string_view kAcceptedPropagators =
    "tracecontext, baggage, b3, b3multi, jaeger, none";

}  // namespace lens
