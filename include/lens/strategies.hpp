// Rank (export) strategies: which ranks of a job export telemetry (docs/strategies.md). A strategy
// is a callable (strategy settings, rank info) -> bool, evaluated once per setup; strategies are
// looked up by name in a process-global registry holding the four built-ins and any registered
// ones. Thread-safety: every function here may be called from any thread; the registry is guarded
// by a mutex, and strategies are called outside it (a strategy may itself use the registry).
// Nothing here throws: errors are values, and a strategy's exception becomes an error.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lens/config.hpp"
#include "lens/rank_info.hpp"
#include "lens/result.hpp"

namespace lens {

// What a strategy reads besides the rank: the few settings of the config that select ranks.
// Setup derives them once (StrategySettings::of); rank and sampling strategies receive them.
struct StrategySettings {
  // P_EXPORT_RANK: the rank single_rank exports from; negative: the last rank.
  std::int64_t export_rank = -1;
  // P_EXPORT_SAMPLE_RATE: the rate of the `sampled` strategy and the rank-aware sampler.
  double export_sample_rate = 1.0;

  static StrategySettings of(const Config& config) noexcept {
    return {config.export_rank, config.export_sample_rate};
  }
};

// True means "this process exports". May read the environment for extra context.
using RankStrategy = std::function<bool(const StrategySettings&, const RankInfo&)>;

// Adds a named strategy. Errors: an empty name (message contains "non-empty"), an empty
// callable, or a name already registered (built-in or not) without allow_override (message
// contains "already registered"). With allow_override the entry is replaced, built-ins too.
Status register_rank_strategy(std::string_view name, RankStrategy strategy,
                              bool allow_override = false);

// Removes a registered strategy. Errors: a built-in name ("built-in", checked first, so an
// overridden built-in is never removed), an unknown name ("not registered").
Status unregister_rank_strategy(std::string_view name);

// Every registered name (built-ins and custom), sorted.
std::vector<std::string> registered_rank_strategies();

// Exactly {all_ranks, first_rank_per_node, sampled, single_rank}.
const std::set<std::string>& builtin_rank_strategies();

// The strategy registered under `name`, or an error `Unknown rank strategy 'name'. Registered
// strategies: [a, b, ...]`.
Result<RankStrategy> get_rank_strategy(std::string_view name);

// Whether this process exports. With `override_strategy` (setup's per-call override), that
// callable decides and neither the registry nor config.rank_strategy is consulted. Otherwise
// config.rank_strategy is looked up; an unknown name gives `Unknown rank strategy 'foo' in
// <variable>. Registered strategies: [...]` (the variable from config.label_of). A strategy
// that throws gives `Rank strategy 'name' failed: <what()>`; nothing propagates.
Result<bool> should_export(const Config& config, const RankInfo& rank,
                           const RankStrategy* override_strategy = nullptr);

// The decision of a strategy already chosen (get_rank_strategy, or setup's override): `what`
// names it in errors ("Rank strategy 'sampled'"). An empty callable gives `<what> is empty;
// expected a callable`; a strategy that throws gives `<what> failed: <what()>`.
Result<bool> decide_export(const RankStrategy& strategy, const std::string& what,
                           const StrategySettings& settings, const RankInfo& rank);

// The deterministic rank bucket of docs/strategies.md, "Rank strategies", bit-exact with the Python original:
// MD5 of the rank's decimal text, read as a big-endian 128-bit integer, modulo 10000, divided
// by 10000.0 — a value in [0.0, 0.9999]. The `sampled` strategy and the rank-aware sampler
// keep a rank iff sampled_rank_bucket(rank) < rate. Returns 1.0 (never kept) only if the
// platform's libcrypto refuses MD5.
double sampled_rank_bucket(std::int64_t rank);

}  // namespace lens

namespace lens::detail {
// Test hook, not API: back to the built-ins only, for both the rank-strategy and the
// sampling-strategy registries.
void reset_strategies_for_testing();
}  // namespace lens::detail
