// The standard OpenTelemetry samplers and RankAwareSampler (see include/lens/sampling.hpp).
// Every sampler is immutable after construction, so should_sample is safe from any thread.
#include "lens/sampling.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "lens/strategies.hpp"

namespace lens {
namespace {

class AlwaysOnSampler final : public Sampler {
 public:
  AlwaysOnSampler() noexcept : Sampler(SamplerShape::always_sample) {}
  SamplingDecision should_sample(const SamplingParams& /*params*/) const noexcept override {
    return SamplingDecision::record_and_sample;
  }
  std::string description() const override { return "AlwaysOnSampler"; }
};

class AlwaysOffSampler final : public Sampler {
 public:
  AlwaysOffSampler() noexcept : Sampler(SamplerShape::always_drop) {}
  SamplingDecision should_sample(const SamplingParams& /*params*/) const noexcept override {
    return SamplingDecision::drop;
  }
  std::string description() const override { return "AlwaysOffSampler"; }
};

// Keeps a trace iff the low 64 bits of its id (bytes 8..15, big-endian) are below
// ratio * 2^64, as the OpenTelemetry specification and the Python SDK define it. At 1 or more
// and at 0 or less (or NaN) the rule is fixed.
class TraceIdRatioSampler final : public Sampler {
 public:
  explicit TraceIdRatioSampler(double ratio)
      : Sampler(ratio >= 1.0     ? SamplerShape::always_sample
                : !(ratio > 0.0) ? SamplerShape::always_drop
                                 : SamplerShape::custom),
        ratio_(ratio) {
    if (shape() == SamplerShape::custom) {
      // ratio * 2^64 is exact in double and below 2^64; ceil makes "value < threshold" equal
      // to "value < ratio * 2^64" for integer values.
      threshold_ = static_cast<std::uint64_t>(std::ceil(std::ldexp(ratio, 64)));
    }
  }

  SamplingDecision should_sample(const SamplingParams& params) const noexcept override {
    if (shape() == SamplerShape::always_sample) {
      return SamplingDecision::record_and_sample;
    }
    if (shape() == SamplerShape::always_drop) {
      return SamplingDecision::drop;
    }
    std::uint64_t value = 0;
    for (std::size_t i = 8; i < 16; ++i) {
      value = (value << 8) | params.trace_id[i];
    }
    return value < threshold_ ? SamplingDecision::record_and_sample : SamplingDecision::drop;
  }

  std::string description() const override {
    return "TraceIdRatioBasedSampler{" + std::to_string(ratio_) + "}";
  }

 private:
  double ratio_;
  std::uint64_t threshold_ = 0;
};

// Follows the parent's sampled flag; the root sampler decides only for spans without a parent.
// (OpenTelemetry's defaults for the four parent cases: sampled -> always_on, not sampled ->
// always_off, for remote and local parents alike.) Around a root that always samples or always
// drops, the rule is fixed.
class ParentBasedSampler final : public Sampler {
 public:
  explicit ParentBasedSampler(std::shared_ptr<const Sampler> root)
      : Sampler(shape_around(*root)), root_(std::move(root)) {}

  SamplingDecision should_sample(const SamplingParams& params) const noexcept override {
    if (!params.has_parent) {
      return root_->should_sample(params);
    }
    return params.parent_sampled ? SamplingDecision::record_and_sample : SamplingDecision::drop;
  }

  std::string description() const override { return "ParentBased{" + root_->description() + "}"; }

 private:
  static SamplerShape shape_around(const Sampler& root) noexcept {
    switch (root.shape()) {
      case SamplerShape::always_sample:
        return SamplerShape::parent_or_sample;
      case SamplerShape::always_drop:
        return SamplerShape::parent_or_drop;
      default:
        return SamplerShape::custom;
    }
  }

  std::shared_ptr<const Sampler> root_;
};

// Python's float repr for the values a rate takes: shortest round trip, at least one decimal.
std::string format_rate(double rate) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), rate);
  if (ec != std::errc()) {
    return std::to_string(rate);
  }
  std::string text(buffer, end);
  if (text.find_first_of(".eni") == std::string::npos) {  // not 1e-05, inf, nan
    text += ".0";
  }
  return text;
}

}  // namespace

std::shared_ptr<const Sampler> make_standard_sampler(SamplerKind kind, double ratio) {
  switch (kind) {
    case SamplerKind::always_on:
      return std::make_shared<AlwaysOnSampler>();
    case SamplerKind::always_off:
      return std::make_shared<AlwaysOffSampler>();
    case SamplerKind::traceidratio:
      return std::make_shared<TraceIdRatioSampler>(ratio);
    case SamplerKind::parentbased_always_on:
      return std::make_shared<ParentBasedSampler>(std::make_shared<AlwaysOnSampler>());
    case SamplerKind::parentbased_always_off:
      return std::make_shared<ParentBasedSampler>(std::make_shared<AlwaysOffSampler>());
    case SamplerKind::parentbased_traceidratio:
      return std::make_shared<ParentBasedSampler>(std::make_shared<TraceIdRatioSampler>(ratio));
  }
  return std::make_shared<ParentBasedSampler>(std::make_shared<AlwaysOnSampler>());
}

std::shared_ptr<const Sampler> make_default_sampler(const OtelSettings& otel) {
  return make_standard_sampler(otel.traces_sampler.value, otel.sampler_ratio());
}

RankAwareSampler::RankAwareSampler(const RankInfo& rank, double rate,
                                   std::shared_ptr<const Sampler> delegate)
    : RankAwareSampler(rank.rank, rate,
                       rate >= 1.0     ? true
                       : !(rate > 0.0) ? false
                                       : sampled_rank_bucket(rank.rank) < rate,
                       delegate != nullptr
                           ? std::move(delegate)
                           : make_standard_sampler(SamplerKind::parentbased_always_on, 1.0)) {}

RankAwareSampler::RankAwareSampler(int rank, double rate, bool kept,
                                   std::shared_ptr<const Sampler> delegate)
    : Sampler(kept ? delegate->shape() : SamplerShape::always_drop),
      rank_(rank),
      rate_(rate),
      kept_(kept),
      delegate_(std::move(delegate)) {}

SamplingDecision RankAwareSampler::should_sample(const SamplingParams& params) const noexcept {
  if (!kept_) {
    return SamplingDecision::drop;
  }
  return delegate_->should_sample(params);
}

std::string RankAwareSampler::description() const {
  return "RankAwareSampler(rank=" + std::to_string(rank_) + ", rate=" + format_rate(rate_) + ")";
}

}  // namespace lens
