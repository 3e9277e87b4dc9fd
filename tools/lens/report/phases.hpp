// The phases of a training step and which Megatron spans belong to each (docs/report.md).
// Constants and pure functions; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace lens::report {

enum class Phase : std::size_t {
  forward_backward,
  optimizer,
  communication,
  pipeline,  // pipeline-parallel point-to-point sends and receives (waiting for the next stage)
  data_loading,
  checkpoint,
  evaluation,
  other,  // step time outside every phase span: untraced code, or phase spans switched off
};

inline constexpr std::size_t kPhaseCount = 8;
using PhaseTimes = std::array<double, kPhaseCount>;  // milliseconds per phase

std::string_view phase_name(Phase phase);

inline constexpr std::size_t index_of(Phase phase) { return static_cast<std::size_t>(phase); }

// The phase a span name belongs to; nullopt for spans that carry none of their own (the step,
// job-level spans, unknown names): their time goes to the phase of their nearest ancestor.
std::optional<Phase> phase_of(std::string_view span_name);

// Waiting for peers shows up here on the fast ranks (collectives, pipeline receives), so it never
// names where a lag starts when another phase explains it.
inline constexpr bool is_wait_phase(Phase phase) {
  return phase == Phase::communication || phase == Phase::pipeline;
}

}  // namespace lens::report
