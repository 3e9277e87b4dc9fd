// What `lens config` prints (see config_json.hpp).
#include "config/config_json.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "lens/groups.hpp"
#include "lens/known_variables.hpp"
#include "lens/megatron/config.hpp"

namespace lens::cli {
namespace {

using Json = nlohmann::ordered_json;

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

// The attribute, event and link limits.
void put_limits(OtelWriter& w, const LimitSettings& l) {
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
  put_limits(w, o.limits);
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

// "auto", "off", or the seconds.
Json hang_timeout_json(const HangTimeout& timeout) {
  switch (timeout.mode) {
    case HangTimeout::Mode::automatic:
      return "auto";
    case HangTimeout::Mode::off:
      return "off";
    case HangTimeout::Mode::fixed:
      break;
  }
  return timeout.seconds;
}

// Where each value came from: the config's fields, the rank's and the OTel settings'.
Json sources_json(const Config& config, const RankInfo& rank, const std::string& run_id_source,
                  const Json& otel_sources) {
  Json sources = Json::object();
  for (const std::string& field : config_field_names()) {
    sources[field] = field == "run_id" ? run_id_source : config.source_of(field);
  }
  const auto [rank_source, world_source] = rank_sources(rank);
  sources["rank"] = rank_source;
  sources["world_size"] = world_source;
  sources.update(otel_sources);
  return sources;
}

}  // namespace

nlohmann::ordered_json config_json(const Config& config, const RankInfo& rank, bool exporting,
                                   const Attributes& resource, const std::string& run_id_source,
                                   const Env& env) {
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
  out["hang_timeout"] = hang_timeout_json(config.hang_timeout);  // seconds, or a word
  out["hang_startup_timeout"] = hang_timeout_json(config.hang_startup_timeout);
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

  out["sources"] = sources_json(config, rank, run_id_source, otel_sources);
  out["warnings"] = variable_warnings(env, config.prefix, config.fallback_prefix);
  return out;
}

}  // namespace lens::cli
