// `lens report --job DIR...`: reads the runs of one job (each DIR's telemetry split by run
// identity, nemo.lens.run_uuid, else nemo.run.id), accounts them (job_ledger.hpp) and writes the
// ledger page, the "ledger" of summary.json next to it, and the console summary.
// Not thread-safe (one call at a time per output path).
#pragma once

#include <ostream>

#include "report/report_options.hpp"

namespace lens::report {

// Exit status: 0, 1 when an output cannot be written, 2 when a DIR is unusable.
int run_job_report(const ReportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace lens::report
