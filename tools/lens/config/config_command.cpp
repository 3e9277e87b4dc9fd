// `lens config`: resolves the configuration exactly as setup would on this rank and prints
// it (JSON by default, or an aligned table), with where each value came from. Invalid input:
// exit status 2, nothing on stdout, one line on stderr starting "lens: ".
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "lens/config.hpp"
#include "lens/env.hpp"
#include "lens/groups.hpp"
#include "lens/known_variables.hpp"
#include "lens/megatron/config.hpp"
#include "lens/megatron/span_groups.hpp"
#include "lens/rank_info.hpp"
#include "lens/resource.hpp"
#include "lens/strategies.hpp"
#include "lens/validate.hpp"

namespace lens::cli {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kConfigUsage =
    "usage: lens config [--prefix P] [--fallback-prefix F]\n"
    "                   [--rank R --world-size W [--local-rank L]]\n"
    "                   [--otel-enabled] [--otel-service-name NAME] [--otel-span-groups SPEC]\n"
    "                   [--format json|text]\n"
    "\n"
    "Prints the configuration that setup would resolve on this rank, with the source of\n"
    "every value. --prefix MEGATRON_OTEL implies --fallback-prefix NEMO_LENS, the Megatron\n"
    "span-group vocabulary and the Megatron defaults. Without --rank, the rank comes from the\n"
    "launcher's variables (torchrun, Open MPI, PMI, SLURM). --local-rank defaults to the rank\n"
    "(one node). Exit status 2 on invalid input.\n";

Json attribute_json(const AttributeValue& value) {
  return std::visit([](const auto& v) { return Json(v); }, value);
}

// Writes typed OTEL settings under slash-separated paths of `out` and records each one's
// source in `sources` under the dotted key "otel.<path>".
class OtelWriter {
 public:
  OtelWriter(Json& out, Json& sources) : out_(out), sources_(sources) {}

  template <class T>
  void put(const std::string& path, Json value, const Sourced<T>& setting) {
    out_[Json::json_pointer("/" + path)] = std::move(value);
    std::string dotted = path;
    std::replace(dotted.begin(), dotted.end(), '/', '.');
    sources_["otel." + dotted] = setting.source.empty() ? "default" : setting.source;
  }

 private:
  Json& out_;
  Json& sources_;
};

Json optional_json(const std::optional<std::int64_t>& value) {
  return value ? Json(*value) : Json(nullptr);
}

void put_otlp(OtelWriter& w, const std::string& signal, const OtlpSignalSettings& s) {
  const std::string p = "exporter_otlp/" + signal + "/";
  Json headers = Json::object();
  for (const auto& header : s.headers.value) {
    headers[header.key] = "[REDACTED]";  // header values are credentials: never printed
  }
  w.put(p + "protocol", std::string(to_string(s.protocol.value)), s.protocol);
  w.put(p + "endpoint", s.endpoint.value, s.endpoint);
  w.put(p + "headers", headers, s.headers);
  w.put(p + "timeout_ms", s.timeout_ms.value, s.timeout_ms);
  w.put(p + "compression", s.compression.value, s.compression);
  w.put(p + "certificate", s.certificate.value, s.certificate);
  w.put(p + "client_key", s.client_key.value, s.client_key);
  w.put(p + "client_certificate", s.client_certificate.value, s.client_certificate);
  w.put(p + "insecure", s.insecure.value, s.insecure);
}

void put_batch(OtelWriter& w, const std::string& name, const BatchProcessorSettings& b) {
  w.put(name + "/schedule_delay_ms", b.schedule_delay_ms.value, b.schedule_delay_ms);
  w.put(name + "/export_timeout_ms", b.export_timeout_ms.value, b.export_timeout_ms);
  w.put(name + "/max_queue_size", b.max_queue_size.value, b.max_queue_size);
  w.put(name + "/max_export_batch_size", b.max_export_batch_size.value, b.max_export_batch_size);
}

Json otel_json(const OtelSettings& o, Json& sources) {
  Json out = Json::object();
  OtelWriter w(out, sources);
  Json resource = Json::object();
  for (const auto& [key, value] : o.resource_attributes.value) {
    resource[key] = value;
  }
  w.put("sdk_disabled", o.sdk_disabled.value, o.sdk_disabled);
  w.put("service_name", o.service_name.value, o.service_name);
  w.put("resource_attributes", resource, o.resource_attributes);
  w.put("traces_sampler", std::string(to_string(o.traces_sampler.value)), o.traces_sampler);
  w.put("traces_sampler_arg",
        o.traces_sampler_arg.value ? Json(*o.traces_sampler_arg.value) : Json(nullptr),
        o.traces_sampler_arg);
  w.put("propagators", o.propagators.value, o.propagators);
  put_otlp(w, "traces", o.traces);
  put_otlp(w, "metrics", o.metrics);
  put_otlp(w, "logs", o.logs);
  w.put("metrics_temporality_preference", std::string(to_string(o.metrics_temporality.value)),
        o.metrics_temporality);
  put_batch(w, "bsp", o.bsp);
  put_batch(w, "blrp", o.blrp);
  w.put("metric_export_interval_ms", o.metric_export_interval_ms.value,
        o.metric_export_interval_ms);
  w.put("metric_export_timeout_ms", o.metric_export_timeout_ms.value, o.metric_export_timeout_ms);
  Json metrics_exporters = Json::array();
  for (const MetricsExporter exporter : o.metrics_exporters.value) {
    metrics_exporters.push_back(std::string(to_string(exporter)));
  }
  // Empty: the metrics go where the lens exporter sends every signal.
  w.put("metrics_exporter", metrics_exporters, o.metrics_exporters);
  w.put("exporter_prometheus/host", o.prometheus_host.value, o.prometheus_host);
  w.put("exporter_prometheus/port", o.prometheus_port.value, o.prometheus_port);
  const LimitSettings& l = o.limits;
  w.put("limits/attribute_value_length", optional_json(l.attribute_value_length.value),
        l.attribute_value_length);
  w.put("limits/attribute_count", l.attribute_count.value, l.attribute_count);
  w.put("limits/span_attribute_value_length", optional_json(l.span_attribute_value_length.value),
        l.span_attribute_value_length);
  w.put("limits/span_attribute_count", l.span_attribute_count.value, l.span_attribute_count);
  w.put("limits/span_event_count", l.span_event_count.value, l.span_event_count);
  w.put("limits/span_link_count", l.span_link_count.value, l.span_link_count);
  w.put("limits/event_attribute_count", l.event_attribute_count.value, l.event_attribute_count);
  w.put("limits/link_attribute_count", l.link_attribute_count.value, l.link_attribute_count);
  w.put("limits/logrecord_attribute_value_length",
        optional_json(l.logrecord_attribute_value_length.value),
        l.logrecord_attribute_value_length);
  w.put("limits/logrecord_attribute_count", l.logrecord_attribute_count.value,
        l.logrecord_attribute_count);
  return out;
}

// The variable a launcher's rank and world size came from.
std::pair<std::string, std::string> rank_sources(const RankInfo& rank) {
  if (rank.source == "torchrun") return {"env:RANK", "env:WORLD_SIZE"};
  if (rank.source == "openmpi") return {"env:OMPI_COMM_WORLD_RANK", "env:OMPI_COMM_WORLD_SIZE"};
  if (rank.source == "pmi") return {"env:PMI_RANK", "env:PMI_SIZE"};
  if (rank.source == "slurm") return {"env:SLURM_PROCID", "env:SLURM_NTASKS"};
  if (rank.source == "explicit") return {"cli:--rank", "cli:--world-size"};
  return {"default", "default"};
}

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

// What the variables tell of mistakes: those nothing reads under this command's prefixes and
// OTEL_; when the Megatron prefix is not one of them, its misspelt variables too, and one line
// naming the Megatron variables that only --prefix MEGATRON_OTEL (the trainer) reads.
std::vector<std::string> variable_warnings(const Env& env, const std::string& prefix,
                                           const std::string& fallback) {
  std::vector<std::string> warnings = unknown_variable_warnings(env, prefix, fallback);
  const std::string megatron(lens::megatron::kPrefix);
  if (prefix == megatron || fallback == megatron) return warnings;
  for (std::string& warning : unknown_variable_warnings(env, megatron)) {
    if (warning.rfind(megatron + "_", 0) == 0) warnings.push_back(std::move(warning));
  }
  std::string names;
  int count = 0;
  for (const auto& [name, value] : env.snapshot()) {
    if (name.rfind(megatron + "_", 0) != 0) continue;
    const std::string_view key = std::string_view(name).substr(megatron.size() + 1);
    const auto& keys = known_prefixed_keys();
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) continue;
    names += (names.empty() ? "" : ", ") + name;
    ++count;
  }
  if (count > 0) {
    warnings.push_back(names + (count == 1 ? " is" : " are") + " read only under the prefix " +
                       megatron + " (the Megatron integration), not " + prefix +
                       "; run `lens config --prefix " + megatron +
                       "` to see what the trainer reads");
  }
  return warnings;
}

int fail(const std::string& message) {
  std::cerr << "lens: " << message << "\n";
  return 2;
}

// The configuration from the environment under --prefix (and its fallback), with the Megatron
// defaults for MEGATRON_OTEL and the --otel-* flags applied.
Result<Config> load_config(const ParsedOptions& options, const Env& env) {
  const std::string prefix = options.get("--prefix").value_or(std::string(kDefaultPrefix));
  const bool megatron_prefix = prefix == lens::megatron::kPrefix;
  std::string fallback = options.get("--fallback-prefix").value_or("");
  if (megatron_prefix && !options.get("--fallback-prefix")) {
    fallback = std::string(lens::megatron::kFallbackPrefix);
  }
  if (options.get("--prefix") && prefix.empty()) {
    return Error("invalid value for --prefix: ''; accepted: a non-empty prefix such as NEMO_LENS");
  }
  if (megatron_prefix) {
    if (Status status = lens::megatron::register_span_groups(); !status.ok()) {
      return Error(status.message());
    }
  }
  auto config_result = Config::from_env(prefix, fallback, env);
  if (!config_result.ok()) return Error(config_result.message());
  Config config = std::move(config_result).value();
  if (megatron_prefix) lens::megatron::apply_defaults(config);

  CliOverrides overrides;
  overrides.otel_enabled = options.has("--otel-enabled");
  for (const char* flag : {"--otel-service-name", "--otel-span-groups"}) {
    if (auto value = options.get(flag);
        value && value->find_first_not_of(" \t") == std::string::npos) {
      return Error(
          std::string("invalid value for ") + flag + ": '" + *value + "'; accepted: a non-empty " +
          (std::string(flag) == "--otel-service-name" ? "service name" : "span-group spec"));
    }
  }
  overrides.service_name = options.get("--otel-service-name");
  overrides.span_groups = options.get("--otel-span-groups");
  config.apply(overrides);
  return config;
}

// The rank: explicit flags, or what the launcher set.
Result<RankInfo> resolve_rank(const ParsedOptions& options, const Env& env) {
  const auto rank_flag = options.get("--rank");
  const auto world_flag = options.get("--world-size");
  const auto local_flag = options.get("--local-rank");
  if (!rank_flag && !world_flag && !local_flag) {
    auto detected = RankInfo::detect(env);
    if (!detected.ok()) return Error(detected.message());
    return *detected;
  }
  if (!rank_flag || !world_flag) {
    return Error("--rank and --world-size must be given together (--local-rank is optional)");
  }
  auto r = parse_int_option("--rank", *rank_flag, 0);
  auto w = parse_int_option("--world-size", *world_flag, 1);
  if (!r.ok()) return Error(r.message());
  if (!w.ok()) return Error(w.message());
  int local = *r;
  if (local_flag) {
    auto l = parse_int_option("--local-rank", *local_flag, 0);
    if (!l.ok()) return Error(l.message());
    local = *l;
  }
  auto made = RankInfo::make(*r, *w, local, local_flag ? std::max(local + 1, 1) : *w, 0);
  if (!made.ok()) return Error(made.message());
  RankInfo rank = *made;
  rank.source = "explicit";
  return rank;
}

// What `lens config` prints: the resolved values, the OTel settings, the resource, where each
// value came from, and the warnings about the environment's variables.
Json config_json(const Config& config, const RankInfo& rank, bool exporting,
                 const Attributes& resource, const std::string& run_id_source, const Env& env) {
  auto groups = resolve_span_groups(config.span_groups);  // validated before
  Json out;
  out["enabled"] = config.enabled;
  out["service_name"] = config.service_name;
  out["rank_strategy"] = config.rank_strategy;
  out["export_rank"] = config.export_rank;
  out["export_sample_rate"] = config.export_sample_rate;
  out["sampling_strategy"] = config.sampling_strategy;
  out["traces_enabled"] = config.traces_enabled;
  out["metrics_enabled"] = config.metrics_enabled;
  out["logs_enabled"] = config.logs_enabled;
  out["span_groups"] = config.span_groups;
  out["resolved_span_groups"] = groups.ok() ? Json(*groups) : Json::array();
  out["exporter"] = to_string(config.exporter);
  out["console_format"] = to_string(config.console_format);
  out["file_path"] = config.file_path;
  switch (config.hang_timeout.mode) {
    case HangTimeout::Mode::automatic:
      out["hang_timeout"] = "auto";
      break;
    case HangTimeout::Mode::off:
      out["hang_timeout"] = "off";
      break;
    case HangTimeout::Mode::fixed:
      out["hang_timeout"] = config.hang_timeout.seconds;  // seconds
      break;
  }
  switch (config.hang_startup_timeout.mode) {
    case HangTimeout::Mode::automatic:
      out["hang_startup_timeout"] = "auto";
      break;
    case HangTimeout::Mode::off:
      out["hang_startup_timeout"] = "off";
      break;
    case HangTimeout::Mode::fixed:
      out["hang_startup_timeout"] = config.hang_startup_timeout.seconds;  // seconds
      break;
  }
  out["span_buffer_mb"] = config.span_buffer_mb;
  out["run_id"] = config.run_id;
  out["user_id"] = config.user_id;
  out["wandb_entity"] = config.wandb_entity;
  out["wandb_project"] = config.wandb_project;
  out["rank"] = rank.rank;
  out["world_size"] = rank.world_size;
  out["is_exporting"] = exporting;
  Json otel_sources = Json::object();
  out["otel"] = otel_json(config.otel, otel_sources);
  Json resource_json = Json::object();
  for (const auto& [key, value] : resource) {
    resource_json[key] = attribute_json(value);
  }
  out["resource"] = resource_json;

  Json sources = Json::object();
  for (const std::string& field : config_field_names()) {
    sources[field] = field == "run_id" ? run_id_source : config.source_of(field);
  }
  const auto [rank_source, world_source] = rank_sources(rank);
  sources["rank"] = rank_source;
  sources["world_size"] = world_source;
  sources.update(otel_sources);
  out["sources"] = sources;
  out["warnings"] = variable_warnings(env, config.prefix, config.fallback_prefix);
  return out;
}

}  // namespace

int config_command(const std::vector<std::string>& args) {
  const OptionSpec spec{{"--prefix", "--fallback-prefix", "--rank", "--world-size", "--local-rank",
                         "--otel-service-name", "--otel-span-groups", "--format"},
                        {"--otel-enabled", "--help"}};
  auto parsed = parse_command_options(args, spec, "config", kConfigUsage);
  if (const int* exit_status = std::get_if<int>(&parsed)) return *exit_status;
  const ParsedOptions& options = std::get<ParsedOptions>(parsed);
  const std::string format = options.get("--format").value_or("json");
  if (format != "json" && format != "text") {
    return fail("invalid value for --format: '" + format + "'; accepted: json, text");
  }

  const Env env = Env::process();
  auto loaded = load_config(options, env);
  if (!loaded.ok()) return fail(loaded.message());
  Config config = std::move(loaded).value();
  auto rank = resolve_rank(options, env);
  if (!rank.ok()) return fail(rank.message());
  if (Status status = validate(config, &*rank); !status.ok()) {
    return fail(status.message());
  }

  auto run_id = resolve_run_id(config, *rank, env, nullptr);
  if (!run_id.ok()) {
    return fail(run_id.message());
  }
  if (!run_id->warning.empty()) {
    std::cerr << "lens: warning: " << run_id->warning << "\n";
  }
  config.run_id = run_id->value;
  const std::string run_id_source = run_id->source == "random" || run_id->source == "collective"
                                        ? std::string("default")
                                        : run_id->source;

  bool exporting = false;
  if (config.enabled && !config.otel.sdk_disabled.value) {
    auto decision = should_export(config, *rank);
    if (!decision.ok()) {
      return fail(decision.message());
    }
    exporting = *decision;
  }
  const Attributes resource = build_resource(config, *rank, {}, env);

  // OTEL_RESOURCE_ATTRIBUTES may name the service when nothing else does (see
  // build_resource); report the name the resource will carry.
  if (auto it = resource.find("service.name");
      it != resource.end() && std::holds_alternative<std::string>(it->second) &&
      std::get<std::string>(it->second) != config.service_name) {
    config.service_name = std::get<std::string>(it->second);
    config.sources["service_name"] = "env:OTEL_RESOURCE_ATTRIBUTES";
  }

  const Json out = config_json(config, *rank, exporting, resource, run_id_source, env);
  if (format == "text") {
    print_text(out);
  } else {
    // Invalid UTF-8 (a value from the environment) is printed as U+FFFD, never a crash.
    std::cout << out.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
  }
  return 0;
}

}  // namespace lens::cli
