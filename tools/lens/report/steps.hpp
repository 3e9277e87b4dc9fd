// Finds the training steps of one rank (spans named megatron.train_step) and splits each step's
// wall time into phases. A step may be a trace root or have a parent; its phases are its
// descendants through parentSpanId within the same trace and rank.
// Split rule: every instant of the step goes to exactly one phase — the phase of the deepest span
// running then (a span without a phase of its own inherits its ancestor's); where sibling spans
// overlap (work on another thread), the sibling that started first keeps the overlap. So
// communication nested in forward_backward counts as communication only, and the phases of a step
// add up to its duration ("other" is step time outside every phase span).
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "report/phases.hpp"
#include "report/run_model.hpp"

namespace lens::report {

inline constexpr const char* kStepSpanName = "megatron.train_step";

struct Step {
  std::optional<std::int64_t> iteration;  // megatron.iteration
  std::size_t span = 0;                   // index into RankData::spans
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  double duration_ms = 0.0;
  PhaseTimes phase_ms{};  // exclusive time per phase; sums to duration_ms
  // Checkpoint and evaluation time (spans outside steps) since the rank's step of the previous
  // iteration ended (zero when that step is missing). In a synchronous run a rank slow between
  // steps makes the others wait in the next step. Untraced time between steps is not counted:
  // it cannot be told from idling.
  PhaseTimes gap_ms{};
  // Descendants that start a phase (their phase differs from their ancestor's), for the timeline.
  std::vector<std::pair<std::size_t, Phase>> phase_spans;
};

struct RankSteps {
  std::vector<Step> steps;            // by start time; one per iteration (the latest when repeated)
  std::size_t repeated = 0;           // steps dropped because their iteration came again later
  std::size_t without_iteration = 0;  // kept, but not compared across ranks
  // Checkpoint and evaluation spans outside every step (the outermost ones): their indices into
  // RankData::spans and their total milliseconds per phase.
  std::vector<std::size_t> outside_spans;
  PhaseTimes outside_ms{};
};

RankSteps find_steps(const RankData& rank);

}  // namespace lens::report
