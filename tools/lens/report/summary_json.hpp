// summary.json, written next to the report for scripts and CI: the run's identity, the compared
// iterations, the run and exposed time, and the ranked stall suspects (docs/report.md,
// "summary.json"). Pure function; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "report/analysis.hpp"

namespace lens::report {

nlohmann::json summary_json(const RunAnalysis& analysis);

}  // namespace lens::report
