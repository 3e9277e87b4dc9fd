// Stall attribution: which rank and phase the other ranks wait for, how much of the run it costs
// and since when (docs/report.md, "Stall attribution").
//
// Per iteration seen on at least two ranks, each rank's work phases (every phase but
// communication and pipeline, where waiting for peers shows up) are compared with the median of the
// other ranks in the same phase and iteration: the deviation d (a phase's time includes the gap
// before the step: checkpoints and evaluations between steps). In a synchronous run the rank whose
// work ends last is the one the others wait for in communication. Walking the work phases in step
// order (checkpoint, evaluation, data_loading, forward_backward, optimizer, other), the frontier
// at each phase boundary is the furthest-behind rank, that is the largest cumulative deviation
// (its running maximum from level: the others catch up only by waiting); its increments add up
// exactly to how much later than the median rank the last rank arrives at the step's
// synchronization (the step's exposed delay), and each increment is credited to the (rank,
// phase) where it appears.
//
// A suspect is a (rank, phase), or a group of ranks and a phase, whose deviation is higher over a
// window of iterations than the run's own noise explains, and by a practically large amount:
//  - noise: per phase, 1.4826 x the median absolute difference of d between consecutive
//    iterations of a rank, / sqrt 2 (a lasting lag hardly moves it); a rank noisier than that
//    uses its own;
//  - test: on a fixed family of windows (lengths from max(5, 5% of the iterations) growing by
//    1/4, starts a quarter of the length apart), the sum of d clipped at +-3 noise (a lone spike
//    counts 3 at most), in standard errors, must reach the one-sided normal quantile of
//    false_alarm_rate / the number of windows tested over every rank, group and phase
//    (Bonferroni: at most that chance of any suspect in a balanced run);
//  - the window of the best such test is refined to its change points (the maximum-sum run of
//    +-1/2 for d at or above half its excess), and its excess (the mean of d winsorized at +-3
//    noise around its median) must be at least min_excess x the median step.
// A group (one host, one pipeline stage, one tensor- or data-parallel group, at most half of
// the ranks) is tested the same way on the median of its members' d per iteration; when it is a
// suspect and three quarters of its members lag by at least half its excess, it replaces its
// members' own suspects in that phase (unless a member's confidence interval lies above 1.5 x
// the group's excess). The others wait where their time exceeds the suspect's the most:
// communication, pipeline receives, or other (an untraced collective). Suspects are ranked by
// the frontier time credited to them in their window, then by their own excess; a suspect's
// share of the run is that time over the compared iterations' wall time (run_ms: the time
// between steps included, so a checkpoint saved between steps is in it). With pipeline
// coordinates, each stage's compute and bubble per step are reported too. Pure functions;
// thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/phases.hpp"
#include "report/run_model.hpp"
#include "report/steps.hpp"

namespace lens::report {

// Where a rank sits: its host and parallel coordinates (resource attributes host.name,
// dl.{tensor,pipeline,data}_parallel.{rank,size}); absent values make no group.
struct RankCoordinates {
  std::string host;
  std::optional<std::int64_t> tp_rank, tp_size, pp_rank, pp_size, dp_rank, dp_size;
};

struct StallOptions {
  double min_excess = 0.02;        // a suspect's excess, as a fraction of the median step
  double false_alarm_rate = 0.01;  // the chance of any suspect in a balanced run
};

enum class SuspectKind { rank, node, stage, group };
std::string_view suspect_kind_name(SuspectKind kind);

struct StallSuspect {
  SuspectKind kind = SuspectKind::rank;
  int rank = 0;            // the rank; for a group its lowest member
  std::vector<int> ranks;  // the rank, or the group's members, ascending
  std::string group;       // "node gpu-b", "pipeline stage 1 of 2", ...; "" for a rank
  std::string also;        // the same ranks as another group: "pipeline stage 1 of 2"
  std::vector<std::int64_t> other_stages;  // a stage: the other pipeline stages
  Phase phase = Phase::other;
  double excess_ms_per_step = 0.0;  // winsorized mean deviation over the window
  double ci_low_ms = 0.0;           // its 95% confidence interval, from the noise
  double ci_high_ms = 0.0;
  double z = 0.0;  // the detecting window's test statistic (standard errors)
  std::int64_t first_iteration = 0;
  std::int64_t last_iteration = 0;
  std::size_t steps = 0;    // iterations in the window with this rank
  double exposed_ms = 0.0;  // frontier time credited to this rank and phase in the window
  double share = 0.0;       // exposed_ms / StallResult::run_ms (the compared iterations' wall time)
  // The other ranks' time in communication (else in other: an untraced collective) exceeds this
  // rank's by at least half the excess: they wait for it.
  bool others_wait = false;
  Phase wait_phase = Phase::communication;
};

// One pipeline stage's time per step: the median over its ranks of each rank's median.
struct StageTime {
  std::int64_t stage = 0;
  std::int64_t stages = 0;  // dl.pipeline_parallel.size
  std::vector<int> ranks;
  double step_ms = 0.0;
  double compute_ms = 0.0;  // every work phase (all but communication and pipeline)
  double bubble_ms = 0.0;   // pipeline sends and receives
};

struct StallResult {
  bool enough_ranks = false;             // at least two ranks share an iteration
  std::size_t ranks = 0;                 // ranks with steps
  std::vector<std::int64_t> iterations;  // compared, ascending
  // The compared iterations' wall time: per iteration, the median across ranks of the time from
  // the end of the rank's step of the previous iteration to the end of this one (the step alone
  // where the rank has none of the previous iteration), summed.
  double run_ms = 0.0;
  double exposed_ms = 0.0;  // sum over iterations of the frontier's lead (>= 0)
  double median_step_ms = 0.0;
  std::vector<StallSuspect> suspects;  // ranked; empty when nothing stands out
  std::vector<StageTime> stages;       // by stage, when the ranks carry pipeline coordinates
  std::size_t tests = 0;               // windows tested, over every rank, group and phase
  double z_critical = 0.0;             // the test's threshold, in standard errors
  double min_excess_ms = 0.0;          // options.min_excess x median_step_ms
  double false_alarm_rate = 0.0;
};

StallResult attribute_stalls(const std::map<int, RankSteps>& steps,
                             const std::map<int, RankCoordinates>& coordinates = {},
                             const StallOptions& options = {});

// The coordinates of every rank from its resource attributes.
std::map<int, RankCoordinates> rank_coordinates(const std::map<int, RankData>& ranks);

// "0-3, 8, 10-11".
std::string rank_ranges(const std::vector<int>& ranks);

// The work phases in step order (the frontier's walk).
const std::vector<Phase>& work_phases();

// "rank 2 spends +48.0 ms per step in forward_backward from iteration 31 on; the other ranks
// wait for it in communication (9.1% of the run)".
std::string suspect_sentence(const StallSuspect& suspect, const StallResult& result);

// One sentence per suspect, or "stalls: no rank stands out (60 iterations, 8 ranks compared)",
// or "stalls: not enough ranks (...)".
std::vector<std::string> stall_lines(const StallResult& result);

}  // namespace lens::report
