// The rank-strategy registry, the four built-in strategies of docs/strategies.md, "Rank strategies", and the MD5
// rank bucket they share with the rank-aware sampler.
// Thread-safety: the registry is a function-local static guarded by its own mutex; the
// built-ins and sampled_rank_bucket are pure.
#include <openssl/evp.h>

#include <array>
#include <exception>
#include <string>

#include "lens/strategies.hpp"
#include "strategies/registry.hpp"

namespace lens {
namespace {

bool all_ranks(const StrategySettings& /*settings*/, const RankInfo& /*rank*/) { return true; }

// Negative export_rank means the last rank; an export_rank >= world_size exports from nobody.
bool single_rank(const StrategySettings& settings, const RankInfo& rank) {
  const std::int64_t target =
      settings.export_rank >= 0 ? settings.export_rank : std::int64_t{rank.world_size} - 1;
  return std::int64_t{rank.rank} == target;
}

// Strict less-than: rate 0.0 exports nobody, rate 1.0 everybody (the largest bucket is 0.9999).
bool sampled(const StrategySettings& settings, const RankInfo& rank) {
  return sampled_rank_bucket(rank.rank) < settings.export_sample_rate;
}

// The original reads LOCAL_RANK itself; here RankInfo::detect has read it (0 when unset).
bool first_rank_per_node(const StrategySettings& /*settings*/, const RankInfo& rank) {
  return rank.local_rank == 0;
}

using Registry = detail::NamedRegistry<RankStrategy>;

Registry& registry() {
  static Registry instance("rank strategy", Registry::Map{
                                                {"all_ranks", all_ranks},
                                                {"first_rank_per_node", first_rank_per_node},
                                                {"sampled", sampled},
                                                {"single_rank", single_rank},
                                            });
  return instance;
}

}  // namespace

Status register_rank_strategy(std::string_view name, RankStrategy strategy, bool allow_override) {
  return registry().add(name, std::move(strategy), allow_override);
}

Status unregister_rank_strategy(std::string_view name) { return registry().remove(name); }

std::vector<std::string> registered_rank_strategies() { return registry().names(); }

const std::set<std::string>& builtin_rank_strategies() { return registry().builtin_names(); }

Result<RankStrategy> get_rank_strategy(std::string_view name) {
  auto strategy = registry().find(name);
  if (!strategy) {
    return registry().unknown(name);
  }
  return *std::move(strategy);
}

Result<bool> decide_export(const RankStrategy& strategy, const std::string& what,
                           const StrategySettings& settings, const RankInfo& rank) {
  if (!strategy) {
    return Error(what + " is empty; expected a callable");
  }
  try {
    return strategy(settings, rank);
  } catch (const std::exception& e) {
    return Error(what + " failed: " + e.what());
  } catch (...) {
    return Error(what + " failed: unknown exception");
  }
}

Result<bool> should_export(const Config& config, const RankInfo& rank,
                           const RankStrategy* override_strategy) {
  const StrategySettings settings = StrategySettings::of(config);
  if (override_strategy != nullptr) {
    return decide_export(*override_strategy, "Rank strategy override", settings, rank);
  }
  auto strategy = registry().find(config.rank_strategy);
  if (!strategy) {
    return registry().unknown(config.rank_strategy, config.label_of("rank_strategy"));
  }
  return decide_export(*strategy, "Rank strategy '" + config.rank_strategy + "'", settings, rank);
}

double sampled_rank_bucket(std::int64_t rank) {
  const std::string text = std::to_string(rank);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_md5(), nullptr) != 1 ||
      length != 16) {
    return 1.0;
  }
  // The digest as a big-endian 128-bit integer, reduced modulo 10000 byte by byte.
  unsigned int bucket = 0;
  for (unsigned int i = 0; i < length; ++i) {
    bucket = (bucket * 256 + digest[i]) % 10000;
  }
  return static_cast<double>(bucket) / 10000.0;
}

namespace detail {

void reset_strategies_for_testing() {
  registry().reset();
  reset_sampling_strategies();
}

}  // namespace detail
}  // namespace lens
