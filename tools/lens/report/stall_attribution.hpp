// Stall attribution: which rank and phase the other ranks wait for, how much of the run it costs
// and since when (docs/report.md, "Stall attribution").
//
// Per iteration seen on at least two ranks, each rank's work phases (every phase but
// communication, where waiting for peers shows up) are compared with the median of the other
// ranks in the same phase and iteration: the deviation d (a phase's time includes the gap before the
// step: checkpoints and evaluations between steps). In a synchronous run the rank whose work
// ends last is the one the others wait for in communication. Walking the work phases in step
// order (checkpoint, evaluation, data_loading, forward_backward, optimizer, other), the frontier
// at each phase boundary is the furthest-behind rank, that is the largest cumulative deviation
// (its running maximum from level: the others catch up only by waiting); its increments add up
// exactly to how much later than the median rank the last rank arrives at the step's
// synchronization (the step's exposed delay), and each increment is credited to the (rank,
// phase) where it appears.
//
// A suspect is a (rank, phase) whose deviation stays high over a window of iterations: the window
// where d stays at or above max(noise, 1% of the median step) — the maximum-sum run of +1/2 for
// an iteration above that level and -1/2 for one below, so both ends are change points (faults
// that start or stop mid-run get their own window) and a lone spike does not stretch it. The
// window is kept when it spans at least max(5, 5% of the iterations) iterations, its median d is
// at least 2% of the median step and 6 standard errors (a median of `length` values with the
// phase's robust noise: 1.4826 x the median absolute difference of d between consecutive
// iterations of a rank, / sqrt 2), and its lower quartile at least half that floor and 4
// standard errors (a quartile's), so a few spikes do not make a stall. Suspects are ranked by
// the frontier time credited to them in their window, then by their own excess. Pure functions;
// thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "report/phases.hpp"
#include "report/steps.hpp"

namespace lens::report {

struct StallSuspect {
  int rank = 0;
  Phase phase = Phase::other;
  double excess_ms_per_step = 0.0;  // median deviation over the window
  std::int64_t first_iteration = 0;
  std::int64_t last_iteration = 0;
  std::size_t steps = 0;      // iterations in the window with this rank
  double exposed_ms = 0.0;    // frontier time credited to this rank and phase in the window
  double share = 0.0;         // exposed_ms / the run's time (sum of per-iteration median steps)
  // The other ranks' time in communication (else in other: an untraced collective) exceeds this
  // rank's by at least half the excess: they wait for it.
  bool others_wait = false;
  Phase wait_phase = Phase::communication;
};

struct StallResult {
  bool enough_ranks = false;             // at least two ranks share an iteration
  std::size_t ranks = 0;                 // ranks with steps
  std::vector<std::int64_t> iterations;  // compared, ascending
  double run_ms = 0.0;                   // sum over iterations of the cross-rank median step
  double exposed_ms = 0.0;               // sum over iterations of the frontier's lead (>= 0)
  double median_step_ms = 0.0;
  std::vector<StallSuspect> suspects;  // ranked; empty when nothing stands out
};

StallResult attribute_stalls(const std::map<int, RankSteps>& steps);

// The work phases in step order (the frontier's walk).
const std::vector<Phase>& work_phases();

// "rank 2 spends +48.0 ms per step in forward_backward from iteration 31 on; the other ranks
// wait for it in communication (9.1% of the run)".
std::string suspect_sentence(const StallSuspect& suspect, const StallResult& result);

// One sentence per suspect, or "stalls: no rank stands out (60 iterations, 8 ranks compared)",
// or "stalls: not enough ranks (...)".
std::vector<std::string> stall_lines(const StallResult& result);

}  // namespace lens::report
