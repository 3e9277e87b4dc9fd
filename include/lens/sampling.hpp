// Trace sampling: the six standard OpenTelemetry samplers (OTEL_TRACES_SAMPLER), the
// rank-aware sampler that keeps or drops a whole rank and delegates to the standard sampler on
// a kept rank (docs/strategies.md, "Samplers"), and the registry of named sampling strategies.
// Thread-safety: samplers are immutable after construction and may be shared across threads;
// the registry functions may be called from any thread (mutex-guarded, factories are called
// outside the lock). Nothing here throws; a factory's exception becomes an error.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lens/config.hpp"
#include "lens/otel_settings.hpp"
#include "lens/rank_info.hpp"
#include "lens/result.hpp"
#include "lens/strategies.hpp"

namespace lens {

enum class SamplingDecision { drop, record_only, record_and_sample };

// What a sampler may look at for a span about to start.
struct SamplingParams {
  std::array<std::uint8_t, 16> trace_id{};
  bool has_parent = false;      // a valid parent span context exists
  bool parent_sampled = false;  // the parent's sampled flag
  bool parent_remote = false;   // the parent came from another process
  std::string_view name;
};

// The rule a sampler applies, when it is one of the few fixed rules that the native span hot path
// applies itself (no virtual call, no SamplingParams built): answers that depend at most on the
// parent's sampled flag.
enum class SamplerShape : std::uint8_t {
  custom,            // anything else: the hot path calls should_sample
  always_sample,     // record_and_sample for every span
  always_drop,       // drop for every span
  parent_or_sample,  // the parent's sampled flag; roots sampled (parentbased_always_on)
  parent_or_drop,    // the parent's sampled flag; roots dropped (parentbased_always_off)
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual SamplingDecision should_sample(const SamplingParams& params) const noexcept = 0;
  // Like opentelemetry-cpp's GetDescription(): "AlwaysOnSampler", "AlwaysOffSampler",
  // "TraceIdRatioBasedSampler{0.100000}" (ratio as std::to_string prints it),
  // "ParentBased{<root sampler's description>}".
  virtual std::string description() const = 0;

  // The fixed rule should_sample follows, as the sampler stated it at construction; `custom`
  // unless a subclass states one (it must then answer exactly so).
  SamplerShape shape() const noexcept { return shape_; }

 protected:
  Sampler() = default;
  explicit Sampler(SamplerShape shape) noexcept : shape_(shape) {}

 private:
  SamplerShape shape_ = SamplerShape::custom;
};

// One of the six standard samplers. traceidratio keeps a trace iff the big-endian uint64 of
// trace-id bytes 8..15 is < ratio * 2^64 (ratio >= 1: always; ratio <= 0 or NaN: never).
// The parentbased_* samplers follow the parent's sampled flag (local or remote) and use their
// root sampler only for spans without a parent.
std::shared_ptr<const Sampler> make_standard_sampler(SamplerKind kind, double ratio);

// The sampler OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG select (default
// parentbased_always_on), as parsed into `otel`.
std::shared_ptr<const Sampler> make_default_sampler(const OtelSettings& otel);

// Keeps or drops a whole rank, decided once at construction: rate >= 1 keeps, rate <= 0 (or
// NaN) drops, otherwise the rank is kept iff sampled_rank_bucket(rank) < rate (the `sampled`
// rank strategy's test). A dropped rank drops every span; a kept rank returns the delegate's
// decision, so the rank rate and the delegate's ratio multiply. A null delegate means
// parentbased_always_on. Its shape: always_drop on a dropped rank, the delegate's on a kept one.
class RankAwareSampler final : public Sampler {
 public:
  RankAwareSampler(const RankInfo& rank, double rate, std::shared_ptr<const Sampler> delegate);

  SamplingDecision should_sample(const SamplingParams& params) const noexcept override;
  // "RankAwareSampler(rank=3, rate=0.5)": the rate in its shortest round-trip form with at
  // least one decimal (0.5, 1.0, 0.25), as Python's repr prints it.
  std::string description() const override;

  bool rank_kept() const noexcept { return kept_; }
  int rank() const noexcept { return rank_; }
  double rate() const noexcept { return rate_; }
  const std::shared_ptr<const Sampler>& delegate() const noexcept { return delegate_; }

 private:
  // `delegate` not null; `kept` decided.
  RankAwareSampler(int rank, double rate, bool kept, std::shared_ptr<const Sampler> delegate);

  int rank_;
  double rate_;
  bool kept_;
  std::shared_ptr<const Sampler> delegate_;
};

// Builds the sampler of a named sampling strategy from the strategy settings (P_EXPORT_RANK,
// P_EXPORT_SAMPLE_RATE), the rank and the default sampler (the one make_default_sampler gives).
using SamplingStrategyFactory = std::function<std::shared_ptr<const Sampler>(
    const StrategySettings&, const RankInfo&, std::shared_ptr<const Sampler> default_sampler)>;

// Same rules and wording as register_rank_strategy / unregister_rank_strategy; the built-in
// `rank_aware` (RankAwareSampler at settings.export_sample_rate around the default sampler) can
// be overridden but never unregistered.
Status register_sampling_strategy(std::string_view name, SamplingStrategyFactory factory,
                                  bool allow_override = false);
Status unregister_sampling_strategy(std::string_view name);
// Every registered name, sorted.
std::vector<std::string> registered_sampling_strategies();

// The tracer provider's sampler: for an empty config.sampling_strategy the default sampler;
// otherwise the registered factory's sampler, given the default sampler. Errors: an unknown
// name (`Unknown sampling strategy 'x' in <variable>. Registered strategies: [...]`), a
// factory that throws (`Sampling strategy 'x' failed: <what()>`) or returns null.
Result<std::shared_ptr<const Sampler>> make_sampler(const Config& config, const RankInfo& rank);

// The factory registered under `name` (any ASCII case), or an error `Unknown sampling strategy
// 'name'. Registered strategies: [...]`.
Result<SamplingStrategyFactory> get_sampling_strategy(std::string_view name);

// The sampler of a strategy already looked up (`factory`, registered as `name`; empty for none):
// the factory's, given the default sampler that `otel` selects; an empty factory gives that
// default sampler itself. Errors as make_sampler(config, rank)'s, but for the unknown name.
Result<std::shared_ptr<const Sampler>> make_sampler(const SamplingStrategyFactory& factory,
                                                    std::string_view name,
                                                    const StrategySettings& settings,
                                                    const OtelSettings& otel, const RankInfo& rank);

}  // namespace lens

namespace lens::detail {
// Test hook, not API (also declared in lens/strategies.hpp): back to the built-ins only, for
// both the rank-strategy and the sampling-strategy registries.
void reset_strategies_for_testing();
}  // namespace lens::detail
