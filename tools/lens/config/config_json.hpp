// What `lens config` prints: the resolved values, the OTel settings, the resource, where each
// value came from, and the warnings about the environment's variables, as ordered JSON (header
// values never: they are credentials). Pure functions of their arguments.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "lens/config.hpp"
#include "lens/env.hpp"
#include "lens/rank_info.hpp"
#include "lens/resource.hpp"

namespace lens::cli {

nlohmann::ordered_json config_json(const Config& config, const RankInfo& rank, bool exporting,
                                   const Attributes& resource, const std::string& run_id_source,
                                   const Env& env);

}  // namespace lens::cli
