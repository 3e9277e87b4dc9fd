// The short text summary `lens report` prints: what was read, step times per rank, stragglers.
// Pure function; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "report/analysis.hpp"

namespace lens::report {

std::vector<std::string> summary_lines(const RunAnalysis& analysis);

}  // namespace lens::report
