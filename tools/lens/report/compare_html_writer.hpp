// The comparison page of `lens report A B ...`: step time and loss against the iteration, one
// colour per run, a legend naming each run (run id and directory), and a table of the runs.
// Self-contained like the report page (html_writer.hpp): tables escaped here, charts drawn by an
// inline script from a script-safe JSON block. Thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "report/run_comparison.hpp"

namespace lens::report {

// The page's data block: {"runs": [{"label", "color", "stepMs": [[iteration, ms], ...],
// "loss": [[iteration, loss], ...]}, ...]}, values rounded to 1 us and 1e-6.
nlohmann::json comparison_json(const std::vector<ComparedRun>& runs);

void write_comparison_html(const std::vector<ComparedRun>& runs,
                           const std::vector<std::string>& warnings, std::ostream& out);

}  // namespace lens::report
