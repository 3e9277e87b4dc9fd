// What `lens config` reads: the configuration from the environment under --prefix with the
// --otel-* flags applied, and the rank from --rank/--world-size or the launcher's variables.
// Reads only the Env it is given.
#pragma once

#include "cli/options.hpp"
#include "lens/config.hpp"
#include "lens/env.hpp"
#include "lens/rank_info.hpp"
#include "lens/result.hpp"

namespace lens::cli {

// The configuration from the environment under --prefix (and its fallback), with the Megatron
// defaults for MEGATRON_OTEL and the --otel-* flags applied.
Result<Config> load_config(const ParsedOptions& options, const Env& env);

// The rank: explicit flags, or what the launcher set.
Result<RankInfo> resolve_rank(const ParsedOptions& options, const Env& env);

}  // namespace lens::cli
