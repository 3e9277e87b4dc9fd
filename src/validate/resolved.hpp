// What validation resolves on its way (setup's plan keeps it, so that nothing is looked up
// twice): the enabled span groups of the config's spec and the chosen rank and sampling
// strategies, taken from their registries once. Thread-safety: a value type.
#pragma once

#include <set>
#include <string>

#include "lens/config.hpp"
#include "lens/rank_info.hpp"
#include "lens/result.hpp"
#include "lens/sampling.hpp"
#include "lens/strategies.hpp"

namespace lens {

struct ResolvedChoices {
  std::set<std::string> span_groups;          // config.span_groups resolved
  RankStrategy rank_strategy;                 // config.rank_strategy's callable
  SamplingStrategyFactory sampling_strategy;  // empty: OTEL_TRACES_SAMPLER's sampler
};

// validate() (the same checks, order and messages) that also returns what it resolved.
Result<ResolvedChoices> validate_and_resolve(const Config& config, const RankInfo* rank);

}  // namespace lens
