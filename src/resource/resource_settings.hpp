// What the run id and the resource read of the configuration, as setup's plan hands them to
// the resource layer (telemetry/plan.hpp): the public resolve_run_id and build_resource that take
// a Config derive these settings and forward here. Thread-safety: a value type; the functions
// are those of lens/resource.hpp.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lens/config.hpp"
#include "lens/resource.hpp"

namespace lens {

struct ResourceSettings {
  std::string run_id;                     // config.run_id: given, or resolved by setup
  std::string run_id_source = "default";  // its source ("env:NEMO_LENS_RUN_ID", ...)
  std::string prefix{kDefaultPrefix};     // the variables' prefix, for the run id's warning
  std::string service_name = "nemo";
  bool service_name_given = false;  // --otel-service-name or OTEL_SERVICE_NAME set it
  std::string otel_service_name;    // OtelSettings::service_name (a config built in code)
  std::vector<std::pair<std::string, std::string>> otel_resource_attributes;
  std::string user_id;
  std::string wandb_entity;
  std::string wandb_project;

  static ResourceSettings of(const Config& config);
};

// resolve_run_id and build_resource of lens/resource.hpp, from the settings.
Result<RunId> resolve_run_id(const ResourceSettings& settings, const RankInfo& rank, const Env& env,
                             Collective* collective = nullptr);
Attributes build_resource(const ResourceSettings& settings, const RankInfo& rank,
                          const Attributes& caller_attributes, const Env& env,
                          const HostProbe& probe = system_host_probe());

}  // namespace lens
