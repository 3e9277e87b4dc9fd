// The sampling-strategy registry (built-in: rank_aware) and make_sampler, which picks the
// tracer provider's sampler from the config (docs/strategies.md, "Samplers").
// Thread-safety: the registry is a function-local static guarded by its own mutex; factories
// are called outside it.
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "lens/sampling.hpp"
#include "strategies/registry.hpp"

namespace lens {
namespace {

std::shared_ptr<const Sampler> rank_aware(const StrategySettings& settings, const RankInfo& rank,
                                          std::shared_ptr<const Sampler> default_sampler) {
  return std::make_shared<RankAwareSampler>(rank, settings.export_sample_rate,
                                            std::move(default_sampler));
}

using Registry = detail::NamedRegistry<SamplingStrategyFactory>;

Registry& registry() {
  static Registry instance("sampling strategy", Registry::Map{{"rank_aware", rank_aware}});
  return instance;
}

}  // namespace

Status register_sampling_strategy(std::string_view name, SamplingStrategyFactory factory,
                                  bool allow_override) {
  return registry().add(name, std::move(factory), allow_override);
}

Status unregister_sampling_strategy(std::string_view name) { return registry().remove(name); }

std::vector<std::string> registered_sampling_strategies() { return registry().names(); }

Result<SamplingStrategyFactory> get_sampling_strategy(std::string_view name) {
  auto factory = registry().find(name);
  if (!factory) {
    return registry().unknown(name);
  }
  return *std::move(factory);
}

Result<std::shared_ptr<const Sampler>> make_sampler(const SamplingStrategyFactory& factory,
                                                    std::string_view name,
                                                    const StrategySettings& settings,
                                                    const OtelSettings& otel,
                                                    const RankInfo& rank) {
  std::shared_ptr<const Sampler> default_sampler;
  try {
    default_sampler = make_default_sampler(otel);
  } catch (const std::exception& e) {  // only std::bad_alloc can get here
    return Error(std::string("Could not build the default sampler: ") + e.what());
  }
  if (!factory) {
    return default_sampler;
  }
  const std::string what = "Sampling strategy '" + std::string(name) + "'";
  std::shared_ptr<const Sampler> sampler;
  try {
    sampler = factory(settings, rank, std::move(default_sampler));
  } catch (const std::exception& e) {
    return Error(what + " failed: " + e.what());
  } catch (...) {
    return Error(what + " failed: unknown exception");
  }
  if (sampler == nullptr) {
    return Error(what + " returned no sampler; expected a non-null sampler");
  }
  return sampler;
}

Result<std::shared_ptr<const Sampler>> make_sampler(const Config& config, const RankInfo& rank) {
  SamplingStrategyFactory factory;
  if (!config.sampling_strategy.empty()) {
    auto found = registry().find(config.sampling_strategy);
    if (!found) {
      return registry().unknown(config.sampling_strategy, config.label_of("sampling_strategy"));
    }
    factory = *std::move(found);
  }
  return make_sampler(factory, config.sampling_strategy, StrategySettings::of(config), config.otel,
                      rank);
}

namespace detail {

void reset_sampling_strategies() { registry().reset(); }

}  // namespace detail
}  // namespace lens
