// Writes the self-contained HTML report: no network access of any kind (styles and script
// inline, no fonts or images fetched). Tables are rendered here with every data string
// HTML-escaped; the timeline and charts are drawn by the inline script from a JSON block whose
// strings are escaped so that no data can close the script element. Past a few dozen ranks the
// timeline is a heatmap and the per-rank charts keep a few ranks, so the page stays small and
// readable at 1024 ranks; past 1,000 ranks the per-rank tables keep the ranks that stand out and
// summarize the rest (readable at 200,000 ranks). Outlying iterations and times are left out of
// the charts (chart_range.hpp). Thread-safe.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "report/analysis.hpp"
#include "report/chart_range.hpp"
#include "report/heatmap.hpp"
#include "report/rank_selection.hpp"

namespace lens::report {

struct HtmlContext {
  std::string source_dir;      // shown in the header
  std::string perfetto_path;   // the trace file written next to the page ("" when none)
  std::string perfetto_ranks;  // the trace's ranks when not all (RankSelection::describe)
  // Past this many ranks the timeline becomes rank x iteration heatmaps (heatmap.hpp), and the
  // per-rank curves and the breakdown show the `detail_ranks` only.
  std::size_t timeline_lanes_max = 32;
  HeatmapLimits heatmap;
  RankSelection detail_ranks;              // every rank by default
  std::vector<std::string> summary_lines;  // the straggler lines
  std::vector<std::string> warnings;       // reader warnings
  std::string hangs_html;                  // the "Hangs" section (hangs.hpp); "" when none
  // Past this many ranks the per-rank tables show `table_top_ranks` rows (the ranks that stand
  // out) and a summary over all ranks, so the page stays small at 200,000 ranks.
  std::size_t table_ranks_max = 1000;
  std::size_t table_top_ranks = 20;
  // The charts' iterations and times (chart_range.hpp); computed from the analysis when unset.
  // Its warnings are listed with `warnings`.
  std::optional<ChartRange> chart_range;
  std::string job_ledger_html;  // the "Job ledger" section (job_ledger.hpp); "" when none
};

void write_html(const RunAnalysis& analysis, const HtmlContext& context, std::ostream& out);

// & < > " ' as character references.
std::string html_escape(std::string_view text);

// JSON text safe inside <script>: '<', '>', '&' and U+2028/U+2029 as \u escapes (only strings
// can contain them, where the escape means the same character).
std::string script_safe_json(const std::string& json);

}  // namespace lens::report
