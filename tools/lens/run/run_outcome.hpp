// The end of `lens run`: its exit status from how the ranks ended, `lens report` on what the
// collector received, and the closing line. Prints to stdout and stderr; no shared state.
#pragma once

#include "run/rank_processes.hpp"
#include "run/rank_supervisor.hpp"
#include "run/run_options.hpp"

namespace lens::cli {

// The first failed rank's status (with its last lines on stderr), 128 + the stop signal, or 0;
// then the report, written into --out: when it fails, a run that succeeded ends with 1.
int finish_run(const RunOptions& options, const RankProcesses& ranks, const RanksEnd& end);

}  // namespace lens::cli
