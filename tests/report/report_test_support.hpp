// Builds the report's analysis straight from fixture requests, without files.
#pragma once

#include "report/analysis.hpp"
#include "report/run_builder.hpp"
#include "report_fixtures.hpp"

namespace lens::report::testing {

inline RunAnalysis analyze_spec(const RunSpec& spec, StragglerOptions options = {},
                                bool with_metrics = true) {
  RunBuilder builder;
  for (const auto& request : make_traces(spec)) builder.on_traces(request);
  if (with_metrics) {
    for (const auto& request : make_metrics(spec, true)) builder.on_metrics(request);
  }
  return analyze(builder.take(), options);
}

}  // namespace lens::report::testing
