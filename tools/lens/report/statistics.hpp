// Order statistics over samples. Pure functions; thread-safe.
#pragma once

#include <utility>
#include <vector>

namespace lens::report {

// The q-quantile (0 <= q <= 1) with linear interpolation between closest ranks; 0 when empty.
double quantile(std::vector<double> values, double q);

inline double median(std::vector<double> values) { return quantile(std::move(values), 0.5); }

}  // namespace lens::report
