// The merged resource (docs/resources.md, "Merge order": SDK defaults < detected <
// OTEL_RESOURCE_ATTRIBUTES < lens attributes < caller attributes) and encode_resource_attributes
// for child processes (docs/resources.md, "Child processes"). Thread-safety: stateless.
#include <opentelemetry/version.h>

#include <set>
#include <string>

#include "core/parse.hpp"
#include "lens/resource.hpp"
#include "lens/version.hpp"
#include "resource/resource_settings.hpp"

namespace lens {
namespace {

// Later layers win.
void overlay(Attributes& out, const Attributes& layer) {
  for (const auto& [key, value] : layer) {
    out.insert_or_assign(key, value);
  }
}

void put_if_nonblank(Attributes& out, std::string_view key, std::string_view value) {
  if (const std::string_view text = detail::trim(value); !text.empty()) {
    out.insert_or_assign(std::string(key), std::string(text));
  }
}

// The text of a scalar value, or nullopt for arrays.
std::optional<std::string> scalar_text(const AttributeValue& value) {
  if (std::holds_alternative<std::string>(value) || std::holds_alternative<bool>(value) ||
      std::holds_alternative<std::int64_t>(value) || std::holds_alternative<double>(value)) {
    return to_string(value);
  }
  return std::nullopt;
}

}  // namespace

ResourceSettings ResourceSettings::of(const Config& config) {
  ResourceSettings settings;
  settings.run_id = config.run_id;
  settings.run_id_source = config.source_of("run_id");
  settings.prefix = config.prefix;
  settings.service_name = config.service_name;
  settings.service_name_given = config.source_of("service_name") != "default";
  settings.otel_service_name = config.otel.service_name.value;
  settings.otel_resource_attributes = config.otel.resource_attributes.value;
  settings.user_id = config.user_id;
  settings.wandb_entity = config.wandb_entity;
  settings.wandb_project = config.wandb_project;
  return settings;
}

Attributes build_resource(const Config& config, const RankInfo& rank,
                          const Attributes& caller_attributes, const Env& env,
                          const HostProbe& probe) {
  return build_resource(ResourceSettings::of(config), rank, caller_attributes, env, probe);
}

Attributes build_resource(const ResourceSettings& settings, const RankInfo& rank,
                          const Attributes& caller_attributes, const Env& env,
                          const HostProbe& probe) {
  // 1. SDK defaults.
  Attributes out;
  out.insert_or_assign("telemetry.sdk.language", std::string("cpp"));
  out.insert_or_assign("telemetry.sdk.name", std::string("opentelemetry"));
  out.insert_or_assign("telemetry.sdk.version", std::string(OPENTELEMETRY_VERSION));

  // 2. Detected: local, then SLURM (with the job identity), then Kubernetes; later wins.
  overlay(out, detect_local_resource(env, probe));
  overlay(out, detect_slurm_resource(env, settings.run_id));
  overlay(out, detect_kubernetes_resource(env, probe));

  // 3. OTEL_RESOURCE_ATTRIBUTES, as strings; a repeated key keeps its last value.
  bool env_service_name = false;
  for (const auto& [key, value] : settings.otel_resource_attributes) {
    if (key.empty()) {
      continue;
    }
    out.insert_or_assign(key, value);
    env_service_name = env_service_name || key == "service.name";
  }

  // 4. Lens attributes. service.name: --otel-service-name and OTEL_SERVICE_NAME reach the
  // config with a non-default source; a config built in code may still carry only
  // otel.service_name; a default name yields to service.name in OTEL_RESOURCE_ATTRIBUTES.
  if (settings.service_name_given) {
    out.insert_or_assign("service.name", settings.service_name);
  } else if (const std::string_view otel_name = detail::trim(settings.otel_service_name);
             !otel_name.empty()) {
    out.insert_or_assign("service.name", std::string(otel_name));
  } else if (!env_service_name) {
    out.insert_or_assign("service.name", settings.service_name);
  }
  out.insert_or_assign("service.version", std::string(kVersion));
  out.insert_or_assign("dl.rank", static_cast<std::int64_t>(rank.rank));
  out.insert_or_assign("dl.world_size", static_cast<std::int64_t>(rank.world_size));
  if (const std::string_view run_id = detail::trim(settings.run_id); !run_id.empty()) {
    out.insert_or_assign("nemo.run.id", std::string(run_id));
    out.insert_or_assign("service.instance.id",
                         std::string(run_id) + "-rank" + std::to_string(rank.rank));
  }
  put_if_nonblank(out, "nemo.user.id", settings.user_id);
  put_if_nonblank(out, "wandb.entity", settings.wandb_entity);
  put_if_nonblank(out, "wandb.project", settings.wandb_project);
  // An unset or blank DEPLOYMENT_ENV falls through to ENVIRONMENT (docs/resources.md, "Library
  // attributes"); the Python original let a set-but-empty one hide ENVIRONMENT.
  std::string deployment(detail::trim(env.get_or("DEPLOYMENT_ENV")));
  if (deployment.empty()) {
    deployment = detail::trim(env.get_or("ENVIRONMENT"));
  }
  put_if_nonblank(out, "deployment.environment", deployment);

  // 5. The caller's attributes (e.g. Megatron's training attributes) win over everything.
  overlay(out, caller_attributes);
  return out;
}

std::string encode_resource_attributes(const Attributes& attributes, std::string_view inherited,
                                       std::vector<std::string>* warnings) {
  const auto warn = [warnings](std::string line) {
    if (warnings != nullptr) {
      warnings->push_back(std::move(line));
    }
  };

  std::vector<std::string> pairs;
  std::set<std::string, std::less<>> replaced;
  for (const auto& [key, value] : attributes) {
    if (detail::trim(key).empty() || key.find_first_of(",=") != std::string::npos) {
      warn("encode_resource_attributes: dropped key " + detail::quoted(key) +
           ": keys must be non-empty and contain neither ',' nor '='");
      continue;
    }
    const std::optional<std::string> text = scalar_text(value);
    if (!text) {
      warn("encode_resource_attributes: dropped " + detail::quoted(key) +
           ": only string, bool, int and double values can be encoded");
      continue;
    }
    pairs.push_back(key + "=" + detail::percent_encode(*text));
    replaced.emplace(detail::trim(key));
  }

  std::string out;
  const auto append = [&out](std::string_view segment) {
    if (!out.empty()) {
      out.push_back(',');
    }
    out.append(segment);
  };
  if (!detail::trim(inherited).empty()) {
    for (const std::string_view segment : detail::split(inherited, ',')) {
      if (detail::trim(segment).empty()) {
        continue;
      }
      const std::string_view key = detail::trim(segment.substr(0, segment.find('=')));
      if (replaced.find(key) != replaced.end()) {
        continue;
      }
      append(segment);  // byte-for-byte
    }
  }
  for (const std::string& pair : pairs) {
    append(pair);
  }
  return out;
}

std::string encode_resource_attributes(const Attributes& attributes, const Env& env,
                                       std::vector<std::string>* warnings) {
  return encode_resource_attributes(attributes, env.get_or("OTEL_RESOURCE_ATTRIBUTES"), warnings);
}

}  // namespace lens
