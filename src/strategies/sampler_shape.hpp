// The rule a sampler applies, when it is one of the few fixed rules that the native span hot path
// applies itself (no virtual call, no SamplingParams built): the standard samplers whose answer
// depends at most on the parent's sampled flag, and RankAwareSampler around them.
// Thread-safety: pure function of an immutable sampler.
#pragma once

#include <cstdint>

#include "lens/sampling.hpp"

namespace lens::strategies {

enum class SamplerShape : std::uint8_t {
  kCustom,          // anything else: call should_sample
  kAlwaysSample,    // record_and_sample for every span
  kAlwaysDrop,      // drop for every span
  kParentOrSample,  // the parent's sampled flag; roots sampled (parentbased_always_on)
  kParentOrDrop,    // the parent's sampled flag; roots dropped (parentbased_always_off)
};

SamplerShape sampler_shape(const Sampler& sampler) noexcept;

}  // namespace lens::strategies
