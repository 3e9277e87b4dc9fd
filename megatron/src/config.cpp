// Megatron configuration defaults (see lens/megatron/config.hpp).
#include "lens/megatron/config.hpp"

#include "lens/megatron/span_groups.hpp"

namespace lens::megatron {

void apply_defaults(Config& config) {
  // The bare library defaults to "nemo"; a Megatron process without OTEL_SERVICE_NAME is
  // "megatron-lm" (docs/configuration.md, "lens variables").
  if (config.source_of("service_name") == "default") {
    config.service_name = std::string(kDefaultServiceName);
  }
}

Result<Config> config_from_env(const Env& env) {
  if (Status status = register_span_groups(); !status.ok()) {
    return Error(status.message());
  }
  auto config = Config::from_env(kPrefix, kFallbackPrefix, env);
  if (!config.ok()) {
    return config;
  }
  apply_defaults(*config);
  return config;
}

}  // namespace lens::megatron
