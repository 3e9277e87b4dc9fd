// The short text summary `lens report` prints: first the stall attribution (who the other ranks
// wait for, one sentence per suspect), then what was read and step times per rank. Pure function;
// thread-safe.
#pragma once

#include <string>
#include <vector>

#include "report/analysis.hpp"

namespace lens::report {

std::vector<std::string> summary_lines(const RunAnalysis& analysis);

}  // namespace lens::report
