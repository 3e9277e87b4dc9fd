// The example trainer's own switches (not Megatron's: --slow-*, --hang-*, --inf-grad-every,
// --crash-at), taken out of the command line before the Megatron flags are parsed, checked
// against the job's size and turned into the injected faults of one rank.
#pragma once

#include <string>
#include <vector>

#include "injected_faults.hpp"
#include "lens/result.hpp"

namespace lens::megatron::example {

struct ExampleOptions {
  int slow_rank = -1;           // --slow-rank R: this rank is slowed ...
  std::vector<int> slow_ranks;  // --slow-ranks LIST: ... or these (the ranks of a fake host) ...
  int slow_stage_pp = -1;       // --slow-stage-pp K: ... or every rank of pipeline stage K ...
  int slow_ms = 0;  // --slow-ms X: ... by X ms per iteration (a straggler for the run report)
  SlowStage slow_stage = SlowStage::forward;  // --slow-stage S: ... in this stage ...
  int slow_from = 1;                          // --slow-from ITER: ... from this iteration on
  int hang_rank = -1;                         // --hang-rank R: this rank hangs for good ...
  int hang_at = 2;                            // --hang-at ITER: ... at this iteration ...
  SlowStage hang_stage = SlowStage::data;     // --hang-stage S: ... in this stage
  bool hang_at_startup = false;               // --hang-at-startup: ... or in start-up
  int inf_grad_every = 0;  // --inf-grad-every N: every Nth step overflows and is skipped (0: none)
  int crash_at = 0;        // --crash-at ITER: every rank dies inside this iteration (0: never)
};

// Removes --slow-rank/--slow-ranks/--slow-stage-pp/--slow-ms/--slow-stage/--slow-from,
// --hang-rank/--hang-at/--hang-stage/--hang-at-startup, --inf-grad-every and --crash-at (and
// their values) from `args`. An error names the flag, the value and what is accepted.
Result<ExampleOptions> take_example_options(std::vector<std::string>& args);

// The "example options:" part of --help (after Megatron's flags).
const char* example_options_help();

// Checks the ranks and stages named against a job of `world_size` ranks and `pipeline_size`
// stages; an error names the flag, the value and what is accepted.
Status check_example_options(const ExampleOptions& options, int world_size, int pipeline_size);

// The faults `options` inject on rank `rank`, of pipeline stage `pipeline_rank`.
InjectedFaults faults_for_rank(const ExampleOptions& options, int rank, int pipeline_rank);

}  // namespace lens::megatron::example
