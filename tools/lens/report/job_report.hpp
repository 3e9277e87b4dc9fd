// `lens report --job DIR...`: reads the runs of one job (each DIR's telemetry split by run
// identity, nemo.lens.run_uuid, else nemo.run.id), accounts them (job_ledger.hpp) and writes the
// ledger page, the "ledger" of summary.json next to it, and the console summary. Also the
// ledger the run report shows when its DIR holds several runs of one job.
// Not thread-safe (one call at a time per output path).
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>

#include "report/job_ledger.hpp"
#include "report/report_options.hpp"

namespace lens::report {

// Exit status: 0, 1 when an output cannot be written, 2 when a DIR is unusable.
int run_job_report(const ReportOptions& options, std::ostream& out, std::ostream& err);

// The ledger of DIR when it holds two or more runs of one job (one nemo.lens.job_uuid: the
// restarts of a SLURM job, say), for the run report's "Job ledger" section; nullopt otherwise,
// and when DIR cannot be read.
std::optional<JobLedger> job_ledger_in_dir(const std::filesystem::path& dir);

}  // namespace lens::report
