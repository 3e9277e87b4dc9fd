// Compiled as a file of the metrics layer, it includes a header of its own layer and one of the
// core layer below it: it builds (tests/CMakeLists.txt, layers.downward_include_builds).
#include "core/fork_generation.hpp"
#include "metrics/metric_temporality.hpp"
