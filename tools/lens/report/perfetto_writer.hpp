// Writes the run as Chrome trace-event JSON, which ui.perfetto.dev and chrome://tracing open:
// one process per rank (pid = rank + 1, named "rank N", sorted by rank), every span a complete
// ("X") event with ts/dur in microseconds since the run's first span and its attributes as args,
// gauge metrics as counter ("C") events. Spans of a rank share thread 1 while they nest by time;
// a span overlapping another without nesting in it (work on another thread) goes to the next
// thread ("rank N overlap K"). One event per line. Only the ranks `ranks` keeps (every rank by
// default; large runs keep a few, see rank_selection.hpp). Pure function of the analysis;
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>

#include "report/analysis.hpp"
#include "report/rank_selection.hpp"

namespace lens::report {

// String attribute values longer than this are cut in the trace, ending in "... (N bytes)".
inline constexpr std::size_t kMaxTraceArgBytes = 4096;

// Spans written at most, whatever the number of ranks kept: each rank kept gets an equal share
// and writes its earliest spans.
inline constexpr std::uint64_t kMaxTraceSpans = 400000;

// Returns the number of spans left out past `max_spans`.
std::uint64_t write_perfetto(const RunAnalysis& analysis, std::ostream& out,
                             const RankSelection& ranks = {},
                             std::uint64_t max_spans = kMaxTraceSpans);

}  // namespace lens::report
