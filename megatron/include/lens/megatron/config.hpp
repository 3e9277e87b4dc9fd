// The Megatron integration's configuration: MEGATRON_OTEL_* with NEMO_LENS_* as fallback,
// the Megatron span-group vocabulary registered, and the Megatron defaults
// (service name `megatron-lm`). Uses only the public lens headers.
#pragma once

#include <string_view>

#include "lens/config.hpp"
#include "lens/env.hpp"
#include "lens/result.hpp"

namespace lens::megatron {

inline constexpr std::string_view kPrefix = "MEGATRON_OTEL";
inline constexpr std::string_view kFallbackPrefix = "NEMO_LENS";
inline constexpr std::string_view kDefaultServiceName = "megatron-lm";

// Registers the Megatron vocabulary, reads the environment with the Megatron prefixes and
// applies the Megatron defaults. CLI overrides are applied by the caller (Config::apply).
Result<Config> config_from_env(const Env& env = Env::process());

// Applies the Megatron defaults to a config read by Config::from_env.
void apply_defaults(Config& config);

}  // namespace lens::megatron
