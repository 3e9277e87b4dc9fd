// OtelSettings::from_env: the standard OTEL_* variables parsed into typed settings, with
// the specification's defaults and the per-signal > general > default rule for OTLP.
#include "lens/otel_settings.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <type_traits>

#include "core/parse.hpp"

namespace lens {

namespace {

// Enumerator names in declaration order: to_string indexes them and the parser looks words up in
// them, so a name is spelled once. (The sampler names are public: kSamplerKindNames.)
constexpr std::array<std::string_view, 3> kSignalNames = {"traces", "metrics", "logs"};
constexpr std::array<std::string_view, 3> kProtocolNames = {"grpc", "http/protobuf", "http/json"};
constexpr std::array<std::string_view, 3> kTemporalityNames = {"cumulative", "delta", "lowmemory"};
constexpr std::array<std::string_view, 2> kCompressionNames = {"gzip", "none"};
constexpr std::array<std::string_view, 4> kMetricsExporterNames = {"otlp", "prometheus", "console",
                                                                   "none"};

// The name of `value`; names[fallback] for a value outside the enumeration.
template <typename E, std::size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, E value,
                         std::size_t fallback = 0) {
  const auto index = static_cast<std::size_t>(value);
  return names[index < N ? index : fallback];
}

// The enumerator called `word`, if any (for a string E: the name itself).
template <typename E, std::size_t N>
std::optional<E> named(const std::array<std::string_view, N>& names, std::string_view word) {
  const auto it = std::find(names.begin(), names.end(), word);
  if (it == names.end()) return std::nullopt;
  if constexpr (std::is_enum_v<E>) {
    return static_cast<E>(it - names.begin());
  } else {
    return E(*it);
  }
}

}  // namespace

std::string_view to_string(Signal signal) { return name_of(kSignalNames, signal); }

std::string_view to_string(OtlpProtocol protocol) { return name_of(kProtocolNames, protocol); }

std::string_view to_string(SamplerKind kind) {
  return name_of(kSamplerKindNames, kind,
                 static_cast<std::size_t>(SamplerKind::parentbased_always_on));
}

static_assert(kSamplerKindNames.size() ==
              static_cast<std::size_t>(SamplerKind::parentbased_traceidratio) + 1);

std::optional<SamplerKind> parse_sampler_kind(std::string_view name) {
  return named<SamplerKind>(kSamplerKindNames, name);
}

std::string_view to_string(TemporalityPreference preference) {
  return name_of(kTemporalityNames, preference);
}

std::string_view to_string(MetricsExporter exporter) {
  return name_of(kMetricsExporterNames, exporter);
}

const OtlpSignalSettings& OtelSettings::signal(Signal s) const {
  switch (s) {
    case Signal::traces:
      return traces;
    case Signal::metrics:
      return metrics;
    case Signal::logs:
      return logs;
  }
  return traces;
}

double OtelSettings::sampler_ratio() const { return traces_sampler_arg.value.value_or(1.0); }

namespace {

using detail::quoted;
using detail::trim;

class Parser {
 public:
  Parser(const Env& env, std::vector<Error>& problems) : env_(env), problems_(problems) {}

  // The trimmed value, or nullopt when unset or blank.
  std::optional<std::string> get(std::string_view name) const {
    auto raw = env_.get(name);
    if (!raw) {
      return std::nullopt;
    }
    std::string value(trim(*raw));
    if (value.empty()) {
      return std::nullopt;
    }
    return value;
  }

  void problem(std::string message) { problems_.emplace_back(std::move(message)); }

  // An OpenTelemetry boolean: true or false, any case.
  void boolean(std::string_view name, Sourced<bool>& out) {
    auto value = get(name);
    if (!value) {
      return;
    }
    const std::string word = detail::to_lower(*value);
    if (word == "true" || word == "false") {
      out = {word == "true", "env:" + std::string(name)};
      return;
    }
    problem("Invalid boolean for " + std::string(name) + ": " + quoted(*value) +
            "; accepted: true, false (any case)");
  }

  // A non-negative integer, at least `minimum`; the error calls it `what`.
  void integer(std::string_view name, Sourced<std::int64_t>& out, std::int64_t minimum,
               std::string_view accepted, std::string_view what = "value") {
    auto value = get(name);
    if (!value) {
      return;
    }
    auto parsed = detail::parse_int64(*value);
    if (!parsed || *parsed < minimum) {
      problem("Invalid " + std::string(what) + " for " + std::string(name) + ": " + quoted(*value) +
              "; accepted: " + std::string(accepted));
      return;
    }
    out = {*parsed, "env:" + std::string(name)};
  }

  // One of `names`, any case (see named<>); the error calls it `what`.
  template <typename E, std::size_t N>
  void word(std::string_view name, Sourced<E>& out, const std::array<std::string_view, N>& names,
            std::string_view what, std::string_view accepted) {
    auto value = get(name);
    if (!value) {
      return;
    }
    if (auto parsed = named<E>(names, detail::to_lower(*value))) {
      out = {*parsed, "env:" + std::string(name)};
      return;
    }
    problem("Invalid " + std::string(what) + " for " + std::string(name) + ": " + quoted(*value) +
            "; accepted: " + std::string(accepted));
  }

  void optional_integer(std::string_view name, Sourced<std::optional<std::int64_t>>& out) {
    Sourced<std::int64_t> parsed{-1, ""};
    integer(name, parsed, 0, "a non-negative integer");
    if (!parsed.source.empty()) {
      out = {parsed.value, parsed.source};
    }
  }

 private:
  const Env& env_;
  std::vector<Error>& problems_;
};

constexpr std::string_view kMilliseconds = "a non-negative integer number of milliseconds";

// "k1=v1,k2=v2" with percent-decoded values (W3C baggage-like list).
// Header values are secrets: messages name the item by position, never by content.
std::optional<std::vector<std::pair<std::string, std::string>>> parse_key_values(
    Parser& parser, std::string_view name, const std::string& text, bool secret_values) {
  std::vector<std::pair<std::string, std::string>> out;
  int position = 0;
  for (std::string_view item : detail::split(text, ',')) {
    ++position;
    item = trim(item);
    if (item.empty()) {
      continue;
    }
    const auto eq = item.find('=');
    const std::string shown =
        secret_values ? "item " + std::to_string(position) + " (value not shown)" : quoted(item);
    if (eq == std::string_view::npos) {
      parser.problem("Invalid entry in " + std::string(name) + ": " + shown +
                     " has no '='; accepted: key=value pairs separated by commas, values "
                     "percent-encoded");
      return std::nullopt;
    }
    const std::string key(trim(item.substr(0, eq)));
    if (key.empty()) {
      parser.problem("Invalid entry in " + std::string(name) + ": " + shown +
                     " has an empty key; accepted: key=value pairs separated by commas");
      return std::nullopt;
    }
    auto value = detail::percent_decode(trim(item.substr(eq + 1)));
    if (!value) {
      parser.problem("Invalid entry in " + std::string(name) + ": " +
                     (secret_values ? "the value of '" + key + "'" : quoted(item)) +
                     " has a malformed percent escape; accepted: %XX with two hex digits");
      return std::nullopt;
    }
    out.emplace_back(key, *value);
  }
  return out;
}

// Headers that frame the message or steer the connection: the exporter's HTTP or gRPC stack sets
// them (or the pseudo-headers ':path', ':authority', ... they stand for); one from the
// configuration would contradict it.
bool is_framing_header(const std::string& lower_name) {
  static const std::set<std::string, std::less<>> kFraming = {"connection",
                                                              "content-encoding",
                                                              "content-length",
                                                              "content-type",
                                                              "expect",
                                                              "host",
                                                              "keep-alive",
                                                              "proxy-connection",
                                                              "te",
                                                              "trailer",
                                                              "transfer-encoding",
                                                              "upgrade"};
  return kFraming.count(lower_name) != 0;
}

// What gRPC servers accept as metadata by default (GRPC_ARG_MAX_METADATA_SIZE: 8 KiB, counted as
// HPACK does: name, value and 32 bytes per entry). More fails every export with
// RESOURCE_EXHAUSTED; refused at setup instead.
constexpr std::size_t kMaxGrpcMetadataBytes = 8192;

// Header names must be HTTP tokens that are also valid gRPC metadata keys once lower-cased, and
// values printable ASCII: grpc++ aborts the process on anything else, so it is caught here.
// Values are secrets: never shown.
bool check_header_names_and_values(
    Parser& parser, std::string_view name,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  for (const auto& [key, value] : headers) {
    for (const char c : key) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
      if (!ok) {
        parser.problem("Invalid header name in " + std::string(name) + ": " + quoted(key) +
                       "; accepted: letters, digits, '-', '_' and '.'");
        return false;
      }
    }
    if (detail::to_lower(key).rfind("grpc-", 0) == 0) {
      parser.problem("Invalid header name in " + std::string(name) + ": " + quoted(key) +
                     "; names starting with 'grpc-' are reserved by gRPC");
      return false;
    }
    if (is_framing_header(detail::to_lower(key))) {
      // Sent as given, Content-Length=5 made a receiver read 5 bytes of the body and answer 200:
      // every item lost and counted as exported.
      parser.problem("Invalid header name in " + std::string(name) + ": " + quoted(key) +
                     " is set by the exporter itself (message framing or connection); accepted: "
                     "any other name, such as authorization or x-tenant");
      return false;
    }
    for (const char c : value) {
      if (c < 0x20 || c > 0x7e) {
        parser.problem("Invalid header value in " + std::string(name) + ": the value of " +
                       quoted(key) +
                       " (not shown) has a control or non-ASCII character; accepted: printable "
                       "ASCII, percent-encoded in the variable");
        return false;
      }
    }
  }
  return true;
}

// True for "host:port" (a name, IPv4 address or [IPv6] address, and a port 1-65535), nothing else.
bool is_host_port(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return false;
  const std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.find_first_of("/?# \t") != std::string_view::npos) return false;
  if (host.find(':') != std::string_view::npos && (host.front() != '[' || host.back() != ']')) {
    return false;  // an IPv6 address needs its brackets
  }
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) {
    return false;
  }
  const int number = std::stoi(std::string(port));
  return number >= 1 && number <= 65535;
}

// True for an http:// or https:// URL with a host.
bool is_http_url(std::string_view url) {
  std::string_view rest;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else if (url.rfind("https://", 0) == 0) {
    rest = url.substr(8);
  } else {
    return false;
  }
  const auto host_end = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, host_end);
  return !authority.empty() && authority.front() != ':' &&
         authority.find_first_of(" \t") == std::string_view::npos;
}

std::string signal_upper(Signal signal) {
  std::string out(to_string(signal));
  std::transform(out.begin(), out.end(), out.begin(),
                 [](char c) { return static_cast<char>(c - 'a' + 'A'); });
  return out;
}

void parse_signal(Parser& parser, Signal signal, OtlpSignalSettings& out) {
  const std::string general = "OTEL_EXPORTER_OTLP_";
  const std::string specific = general + signal_upper(signal) + "_";
  // The per-signal variable wins over the general one.
  auto pick = [&](std::string_view key) -> std::pair<std::optional<std::string>, std::string> {
    const std::string specific_name = specific + std::string(key);
    if (auto value = parser.get(specific_name)) {
      return {value, specific_name};
    }
    const std::string general_name = general + std::string(key);
    return {parser.get(general_name), general_name};
  };

  if (auto [value, name] = pick("PROTOCOL"); value) {
    parser.word(name, out.protocol, kProtocolNames, "protocol", kAcceptedProtocols);
  }
  const bool http = out.protocol.value != OtlpProtocol::grpc;
  const std::string path = "v1/" + std::string(to_string(signal));

  const std::string specific_endpoint = specific + "ENDPOINT";
  const std::string general_endpoint = general + "ENDPOINT";
  if (auto value = parser.get(specific_endpoint)) {
    out.endpoint = {*value, "env:" + specific_endpoint};
  } else if (auto base = parser.get(general_endpoint)) {
    std::string url = *base;
    if (http) {
      url += (url.empty() || url.back() != '/') ? "/" + path : path;
    }
    out.endpoint = {url, "env:" + general_endpoint};
  } else {
    out.endpoint = {http ? "http://localhost:4318/" + path : "http://localhost:4317", "default"};
  }
  // gRPC also takes "host:port" without a scheme (OTEL_EXPORTER_OTLP_INSECURE then decides TLS).
  if (out.endpoint.source != "default" && !is_http_url(out.endpoint.value) &&
      (http || !is_host_port(out.endpoint.value))) {
    parser.problem("Invalid URL for " + out.endpoint.source.substr(4) + ": " +
                   quoted(out.endpoint.value) + "; accepted: an http:// or https:// URL such as " +
                   (http ? std::string("http://localhost:4318")
                         : std::string("http://localhost:4317, or HOST:PORT for gRPC")));
  }

  if (auto [value, name] = pick("HEADERS"); value) {
    if (auto headers = parse_key_values(parser, name, *value, /*secret_values=*/true)) {
      std::size_t metadata_bytes = 0;
      for (const auto& [key, header_value] : *headers) {
        metadata_bytes += key.size() + header_value.size() + 32;
      }
      bool usable = check_header_names_and_values(parser, name, *headers);
      if (usable && !http && metadata_bytes > kMaxGrpcMetadataBytes) {
        parser.problem("Headers in " + name +
                       " too large for gRPC metadata: " + std::to_string(metadata_bytes) +
                       " bytes (names, values and 32 bytes per header; values not shown); "
                       "accepted: at most " +
                       std::to_string(kMaxGrpcMetadataBytes) +
                       " bytes, the metadata limit of gRPC servers");
        usable = false;
      }
      if (usable) {
        out.headers.value.clear();
        for (auto& [key, header_value] : *headers) {
          // Header names are case-insensitive in HTTP and must be lower case in gRPC metadata
          // (grpc++ aborts the process on "Authorization").
          out.headers.value.push_back({detail::to_lower(key), header_value});
        }
        out.headers.source = "env:" + name;
      }
    }
  }
  if (auto [value, name] = pick("TIMEOUT"); value) {
    parser.integer(name, out.timeout_ms, 0, kMilliseconds, "timeout");
  }
  if (auto [value, name] = pick("COMPRESSION"); value) {
    parser.word(name, out.compression, kCompressionNames, "compression", "gzip, none");
  }
  // The TLS files, taken as given.
  for (auto [key, file] : {std::pair{"CERTIFICATE", &out.certificate},
                           {"CLIENT_KEY", &out.client_key},
                           {"CLIENT_CERTIFICATE", &out.client_certificate}}) {
    if (auto [value, name] = pick(key); value) {
      *file = {*value, "env:" + name};
    }
  }
  if (auto [value, name] = pick("INSECURE"); value) {
    parser.boolean(name, out.insecure);
  }
}

void parse_batch(Parser& parser, std::string_view prefix, BatchProcessorSettings& out) {
  const std::string p(prefix);
  parser.integer(p + "SCHEDULE_DELAY", out.schedule_delay_ms, 0, kMilliseconds);
  parser.integer(p + "EXPORT_TIMEOUT", out.export_timeout_ms, 0, kMilliseconds);
  parser.integer(p + "MAX_QUEUE_SIZE", out.max_queue_size, 1, "a positive integer");
  parser.integer(p + "MAX_EXPORT_BATCH_SIZE", out.max_export_batch_size, 1, "a positive integer");
  if (out.max_export_batch_size.value > out.max_queue_size.value) {
    parser.problem("Invalid value for " + p + "MAX_EXPORT_BATCH_SIZE: '" +
                   std::to_string(out.max_export_batch_size.value) +
                   "'; accepted: a positive integer not above " + p + "MAX_QUEUE_SIZE (" +
                   std::to_string(out.max_queue_size.value) + ")");
  }
}

// OTEL_METRICS_EXPORTER (a list, any case) and the Prometheus endpoint's host and port.
void parse_metrics_exporting(Parser& parser, OtelSettings& s) {
  constexpr std::string_view kList = "OTEL_METRICS_EXPORTER";
  if (auto value = parser.get(kList)) {
    std::vector<MetricsExporter> exporters;
    bool valid = true;
    for (std::string_view part : detail::split(*value, ',')) {
      const std::string name = detail::to_lower(trim(part));
      if (name.empty()) continue;
      const auto exporter = named<MetricsExporter>(kMetricsExporterNames, name);
      if (!exporter) {
        parser.problem("Invalid exporter in OTEL_METRICS_EXPORTER: " + quoted(name) +
                       "; accepted: " + std::string(kAcceptedMetricsExporters));
        valid = false;
        break;
      }
      if (std::find(exporters.begin(), exporters.end(), *exporter) == exporters.end()) {
        exporters.push_back(*exporter);
      }
    }
    const auto has = [&](MetricsExporter e) {
      return std::find(exporters.begin(), exporters.end(), e) != exporters.end();
    };
    if (valid && has(MetricsExporter::none) && exporters.size() > 1) {
      parser.problem("Invalid value for OTEL_METRICS_EXPORTER: " + quoted(*value) +
                     "; 'none' cannot be combined with other exporters; accepted: " +
                     std::string(kAcceptedMetricsExporters));
      valid = false;
    }
    // One push exporter per process: the export counts and self-metrics describe one stream.
    if (valid && has(MetricsExporter::otlp) && has(MetricsExporter::console)) {
      parser.problem("Invalid value for OTEL_METRICS_EXPORTER: " + quoted(*value) +
                     "; otlp and console both push, choose one; accepted: " +
                     std::string(kAcceptedMetricsExporters));
      valid = false;
    }
    if (valid && !exporters.empty()) {
      s.metrics_exporters = {std::move(exporters), "env:" + std::string(kList)};
    }
  }
  if (auto host = parser.get("OTEL_EXPORTER_PROMETHEUS_HOST")) {
    // A name or an address to bind: "0.0.0.0" for every interface.
    if (host->find_first_of("/?#@ \t") != std::string::npos) {
      parser.problem("Invalid host for OTEL_EXPORTER_PROMETHEUS_HOST: " + quoted(*host) +
                     "; accepted: a host name or IP address to listen on, such as localhost, "
                     "127.0.0.1 or 0.0.0.0 (no scheme, port or path)");
    } else {
      s.prometheus_host = {*host, "env:OTEL_EXPORTER_PROMETHEUS_HOST"};
    }
  }
  if (auto port = parser.get("OTEL_EXPORTER_PROMETHEUS_PORT")) {
    const auto parsed = detail::parse_int64(*port);
    if (!parsed || *parsed < 0 || *parsed > 65535) {
      parser.problem("Invalid port for OTEL_EXPORTER_PROMETHEUS_PORT: " + quoted(*port) +
                     "; accepted: an integer from 0 to 65535 such as 9464 (each rank listens on "
                     "it plus its local rank; 0: any free port)");
    } else {
      s.prometheus_port = {*parsed, "env:OTEL_EXPORTER_PROMETHEUS_PORT"};
    }
  }
}

}  // namespace

OtelSettings OtelSettings::from_env(const Env& env) {
  OtelSettings s;
  Parser parser(env, s.problems);

  parser.boolean("OTEL_SDK_DISABLED", s.sdk_disabled);
  if (auto name = parser.get("OTEL_SERVICE_NAME")) {
    s.service_name = {*name, "env:OTEL_SERVICE_NAME"};
  }
  if (auto text = parser.get("OTEL_RESOURCE_ATTRIBUTES")) {
    if (auto pairs =
            parse_key_values(parser, "OTEL_RESOURCE_ATTRIBUTES", *text, /*secret_values=*/false)) {
      s.resource_attributes = {std::move(*pairs), "env:OTEL_RESOURCE_ATTRIBUTES"};
    }
  }

  parser.word("OTEL_TRACES_SAMPLER", s.traces_sampler, kSamplerKindNames, "sampler",
              kAcceptedSamplers);
  const bool ratio_sampler = s.traces_sampler.value == SamplerKind::traceidratio ||
                             s.traces_sampler.value == SamplerKind::parentbased_traceidratio;
  if (auto value = parser.get("OTEL_TRACES_SAMPLER_ARG"); value && ratio_sampler) {
    auto ratio = detail::parse_double(*value);
    if (ratio && *ratio >= 0.0 && *ratio <= 1.0) {
      s.traces_sampler_arg = {*ratio, "env:OTEL_TRACES_SAMPLER_ARG"};
    } else {
      parser.problem("Invalid ratio for OTEL_TRACES_SAMPLER_ARG: " + quoted(*value) +
                     "; accepted: a number in [0.0, 1.0] such as 0.1");
    }
  }

  if (auto value = parser.get("OTEL_PROPAGATORS")) {
    static constexpr std::array<std::string_view, 6> kKnown = {"tracecontext", "baggage", "b3",
                                                               "b3multi",      "jaeger",  "none"};
    std::vector<std::string> names;
    bool valid = true;
    for (std::string_view part : detail::split(*value, ',')) {
      const std::string name = detail::to_lower(trim(part));
      if (name.empty()) {
        continue;
      }
      if (std::find(kKnown.begin(), kKnown.end(), name) == kKnown.end()) {
        parser.problem("Invalid propagator in OTEL_PROPAGATORS: " + quoted(name) +
                       "; accepted: " + std::string(kAcceptedPropagators));
        valid = false;
        break;
      }
      if (name != "none" && std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(name);
      }
    }
    if (valid) {
      s.propagators = {names, "env:OTEL_PROPAGATORS"};
    }
  }

  parse_signal(parser, Signal::traces, s.traces);
  parse_signal(parser, Signal::metrics, s.metrics);
  parse_signal(parser, Signal::logs, s.logs);

  parser.word("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", s.metrics_temporality,
              kTemporalityNames, "temporality", "cumulative, delta, lowmemory");

  parse_batch(parser, "OTEL_BSP_", s.bsp);
  parse_batch(parser, "OTEL_BLRP_", s.blrp);
  parser.integer("OTEL_METRIC_EXPORT_INTERVAL", s.metric_export_interval_ms, 1,
                 "a positive integer number of milliseconds");
  parser.integer("OTEL_METRIC_EXPORT_TIMEOUT", s.metric_export_timeout_ms, 0, kMilliseconds);
  parse_metrics_exporting(parser, s);

  LimitSettings& l = s.limits;
  constexpr std::string_view kCount = "a non-negative integer";
  parser.optional_integer("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", l.attribute_value_length);
  parser.integer("OTEL_ATTRIBUTE_COUNT_LIMIT", l.attribute_count, 0, kCount);
  // Span and log-record attribute limits fall back to the general attribute limits.
  l.span_attribute_value_length = l.attribute_value_length;
  l.span_attribute_count = l.attribute_count;
  l.logrecord_attribute_value_length = l.attribute_value_length;
  l.logrecord_attribute_count = l.attribute_count;
  parser.optional_integer("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", l.span_attribute_value_length);
  parser.integer("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", l.span_attribute_count, 0, kCount);
  parser.integer("OTEL_SPAN_EVENT_COUNT_LIMIT", l.span_event_count, 0, kCount);
  parser.integer("OTEL_SPAN_LINK_COUNT_LIMIT", l.span_link_count, 0, kCount);
  parser.integer("OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", l.event_attribute_count, 0, kCount);
  parser.integer("OTEL_LINK_ATTRIBUTE_COUNT_LIMIT", l.link_attribute_count, 0, kCount);
  parser.optional_integer("OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT",
                          l.logrecord_attribute_value_length);
  parser.integer("OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT", l.logrecord_attribute_count, 0, kCount);
  return s;
}

}  // namespace lens
