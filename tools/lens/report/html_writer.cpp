// The HTML report (see html_writer.hpp).
#include "report/html_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "report/heatmap.hpp"
#include "report/html_assets.hpp"
#include "report/html_page_data.hpp"
#include "report/statistics.hpp"

namespace lens::report {
namespace {

using nlohmann::json;

std::string fixed(double value, int digits = 1) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

void cell(std::ostream& out, const std::string& text, bool numeric = false) {
  out << (numeric ? "<td class=\"num\">" : "<td>") << html_escape(text) << "</td>";
}

// "0, 3, 7" of at most `listed` ranks, then "and N more".
std::string rank_list(const std::vector<int>& ranks, std::size_t listed = 20) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size() && i < listed; ++i) {
    text += (text.empty() ? "" : ", ") + std::to_string(ranks[i]);
  }
  if (ranks.size() > listed) text += " and " + std::to_string(ranks.size() - listed) + " more";
  return text;
}

// Rows of a large run's per-rank table, after its top rows: the distribution of each numeric
// column over all ranks. `columns` holds each column's values (one per rank); an empty column
// gets an empty cell.
void write_distribution_rows(const std::vector<std::vector<double>>& columns, std::size_t leading,
                             std::size_t trailing, std::ostream& out) {
  static constexpr std::pair<const char*, double> kStats[] = {
      {"min", 0.0}, {"p10", 0.1}, {"median", 0.5}, {"p90", 0.9}, {"max", 1.0}};
  for (const auto& [name, q] : kStats) {
    out << "<tr class=\"distribution\"><th>" << name << "</th>";
    for (std::size_t i = 0; i < leading; ++i) out << "<td></td>";
    for (const std::vector<double>& values : columns) {
      if (values.empty()) {
        out << "<td></td>";
      } else {
        cell(out, fixed(quantile(values, q)), true);
      }
    }
    for (std::size_t i = 0; i < trailing; ++i) out << "<td></td>";
    out << "</tr>\n";
  }
}

std::string gpu_text(const AttributeList& resource) {
  std::string name = text_attribute(resource, "dl.gpu.name");
  const std::string index = text_attribute(resource, "dl.gpu.index");
  if (!name.empty()) return index.empty() ? name : name + " #" + index;
  if (!index.empty()) return "GPU #" + index;
  const std::string count = text_attribute(resource, "host.gpu.count");
  return count.empty() ? "" : count + " on host";
}

// Keys every rank has with the same value: the run's configuration.
std::vector<std::pair<std::string, std::string>> common_attributes(const RunData& data) {
  std::vector<std::pair<std::string, std::string>> out;
  if (data.ranks.empty()) return out;
  const RankData& first = data.ranks.begin()->second;
  for (const auto& [key, value] : first.resource) {
    const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    bool same = true;
    for (const auto& [rank, other] : data.ranks) {
      const json* v = find_attribute(other.resource, key);
      if (v == nullptr || *v != value) {
        same = false;
        break;
      }
    }
    if (same) out.emplace_back(key, text);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void write_resources(const RunAnalysis& analysis, const HtmlContext& context, std::ostream& out) {
  out << "<h2>Resources</h2>\n";
  const auto common = common_attributes(analysis.data);
  out << "<h3>Run configuration (the same on every rank)</h3>\n<table><tr><th>attribute</th>"
         "<th>value</th></tr>\n";
  for (const auto& [key, value] : common) {
    out << "<tr>";
    cell(out, key);
    cell(out, value);
    out << "</tr>\n";
  }
  out << "</table>\n<h3>Per rank</h3>\n<table><tr><th>rank</th><th>host</th><th>local rank</th>"
         "<th>pid</th><th>GPU</th><th>TP</th><th>PP</th><th>DP</th><th>steps</th>"
         "<th>step median ms</th><th>spans</th><th>metric points</th><th>logs (errors)</th>"
         "</tr>\n";
  // Past table_ranks_max ranks: the rows of the ranks the charts show, then the distribution.
  const bool large = analysis.data.ranks.size() > context.table_ranks_max;
  std::vector<std::vector<double>> distribution(3);  // steps, step median, spans
  std::set<std::string> hosts;
  // The charts' ranks; when they are all, the first table_top_ranks.
  std::set<int> shown;
  if (large && !context.detail_ranks.all) {
    for (const int rank : context.detail_ranks.ranks()) shown.insert(rank);
  }
  for (const auto& [rank, data] : analysis.data.ranks) {
    if (large && context.detail_ranks.all && shown.size() < context.table_top_ranks) {
      shown.insert(rank);
    }
  }
  for (const auto& [rank, data] : analysis.data.ranks) {
    const RankSteps& steps = analysis.steps.at(rank);
    if (large) {
      std::vector<double> durations;
      for (const Step& step : steps.steps) durations.push_back(step.duration_ms);
      distribution[0].push_back(static_cast<double>(steps.steps.size()));
      if (!durations.empty()) distribution[1].push_back(median(std::move(durations)));
      distribution[2].push_back(static_cast<double>(data.spans.size()));
      hosts.insert(text_attribute(data.resource, "host.name"));
      if (shown.count(rank) == 0) continue;
    }
    std::vector<double> durations;
    for (const Step& step : steps.steps) durations.push_back(step.duration_ms);
    out << "<tr>";
    cell(out, std::to_string(rank), true);
    cell(out, text_attribute(data.resource, "host.name"));
    cell(out, text_attribute(data.resource, "dl.local_rank"), true);
    cell(out, text_attribute(data.resource, "process.pid"), true);
    cell(out, gpu_text(data.resource));
    cell(out, text_attribute(data.resource, "dl.tensor_parallel.size"), true);
    cell(out, text_attribute(data.resource, "dl.pipeline_parallel.size"), true);
    cell(out, text_attribute(data.resource, "dl.data_parallel.size"), true);
    cell(out, std::to_string(steps.steps.size()), true);
    cell(out, durations.empty() ? "" : fixed(median(durations)), true);
    cell(out, std::to_string(data.spans.size()), true);
    cell(out, std::to_string(data.metric_points), true);
    cell(out, std::to_string(data.log_records) + " (" + std::to_string(data.error_logs) + ")",
         true);
    out << "</tr>\n";
  }
  if (large) {
    // rank, host, local rank, pid, GPU, TP, PP, DP | steps, step median | spans | ...
    out << "<tr class=\"distribution\"><th colspan=\"13\">all " << analysis.data.ranks.size()
        << " ranks, on " << hosts.size() << " hosts</th></tr>\n";
    write_distribution_rows({distribution[0], distribution[1], distribution[2]}, 7, 2, out);
  }
  out << "</table>\n";
  if (large) {
    out << "<p class=\"note\">" << analysis.data.ranks.size() << " ranks (more than "
        << context.table_ranks_max << "): the rows of "
        << (context.detail_ranks.all
                ? "the first " + std::to_string(shown.size()) + " ranks"
                : "the ranks in the charts (" + html_escape(context.detail_ranks.describe()) + ")")
        << ", then the distribution over all ranks of steps, step median and spans.</p>\n";
  }
  if (!analysis.info.missing_ranks.empty()) {
    out << "<p class=\"note\">No telemetry from ranks "
        << html_escape(rank_list(analysis.info.missing_ranks)) << ".</p>\n";
  }
}

// Per rank and signal: what the directory holds against the rank's own count.
void write_completeness(const Completeness& completeness, const HtmlContext& context,
                        std::ostream& out) {
  out << "<h2>Telemetry completeness</h2>\n";
  if (!completeness.any_reported) {
    out << "<p class=\"note\">No rank's lens.exporter.* self-metrics are in this directory "
           "(metrics off, or not collected here): received counts only.</p>\n";
  } else {
    out << "<p class=\"note\">received: records in this directory; exported, dropped, failed: "
           "the rank's own count at its last metric collection (at shutdown, after the spans and "
           "log records are flushed; its final metric export is not in it). missing: exported by "
           "the rank's count and not here.</p>\n";
  }
  out << "<table><tr><th>rank</th><th>signal</th><th>received</th><th>exported</th>"
         "<th>dropped</th><th>failed</th><th>missing</th><th>complete</th></tr>\n";
  // Past table_ranks_max ranks: the first ranks not known complete, then the totals.
  const bool large = completeness.ranks.size() > context.table_ranks_max;
  std::size_t shown = 0;
  std::size_t incomplete = 0;
  std::map<std::string, SignalCompleteness> totals;
  std::vector<std::string> order;  // signals in their first order
  for (const RankCompleteness& rank : completeness.ranks) {
    if (large) {
      for (const SignalCompleteness& signal : rank.signals) {
        auto [it, added] = totals.try_emplace(signal.signal, SignalCompleteness{signal.signal});
        if (added) order.push_back(signal.signal);
        SignalCompleteness& total = it->second;
        total.received += signal.received;
        total.exported += signal.exported;
        total.dropped += signal.dropped;
        total.failed += signal.failed;
        total.missing += signal.missing;
      }
      if (rank.complete() == true) continue;
      ++incomplete;
      if (shown++ >= context.table_top_ranks) continue;
    }
    for (const SignalCompleteness& signal : rank.signals) {
      const bool lost = signal.dropped > 0 || signal.missing > 0;
      out << (lost ? "<tr class=\"straggler\">" : "<tr>");
      cell(out, std::to_string(rank.rank), true);
      cell(out, signal.signal);
      cell(out, std::to_string(signal.received), true);
      for (const std::uint64_t value :
           {signal.exported, signal.dropped, signal.failed, signal.missing}) {
        cell(out, signal.reported ? std::to_string(value) : "not reported", true);
      }
      cell(out, !signal.reported ? "unknown" : lost ? "no" : "yes");
      out << "</tr>\n";
    }
  }
  for (const std::string& name : order) {
    const SignalCompleteness& total = totals.at(name);
    out << "<tr class=\"distribution\"><th>all " << completeness.ranks.size() << " ranks</th>";
    cell(out, name);
    for (const std::uint64_t value :
         {total.received, total.exported, total.dropped, total.failed, total.missing}) {
      cell(out, std::to_string(value), true);
    }
    out << "<td></td></tr>\n";
  }
  out << "</table>\n";
  if (large) {
    out << "<p class=\"note\">" << completeness.ranks.size() << " ranks (more than "
        << context.table_ranks_max << "): " << incomplete
        << " not known to be complete, of which the table shows the first "
        << std::min(incomplete, context.table_top_ranks)
        << "; the last rows sum every rank's counts.</p>\n";
  }
  if (!completeness.silent_ranks.empty()) {
    out << "<p class=\"note\">No telemetry at all from ranks "
        << html_escape(rank_list(completeness.silent_ranks))
        << " (not exporting under the rank strategy, or lost).</p>\n";
  }
}

void write_stragglers(const RunAnalysis& analysis, const HtmlContext& context, std::ostream& out) {
  const StragglerResult& result = analysis.stragglers;
  out << "<h2>Per-rank medians</h2>\n";
  if (!result.enough_ranks) {
    out << "<p class=\"note\">Not enough ranks to compare: straggler detection needs steps of "
           "the same iteration on at least two ranks.</p>\n";
    return;
  }
  out << "<p class=\"note\">Window: " << result.iterations.size() << " iterations ("
      << result.iterations.front() << "&ndash;" << result.iterations.back()
      << ") seen on at least two ranks; threshold " << html_escape(percent_text(result.threshold))
      << ". Medians over the window; the last row is the median across ranks.</p>\n";
  out << "<table><tr><th>rank</th><th>steps</th><th>step median ms</th><th>step p90 ms</th>"
         "<th>vs across ranks</th>";
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    out << "<th>" << html_escape(phase_name(static_cast<Phase>(p))) << " ms</th>";
  }
  out << "<th>straggler</th><th>lag in phase</th></tr>\n";
  // Past table_ranks_max ranks: the stragglers, the ranks with the largest excess, then the
  // distribution over all ranks.
  const bool large = result.ranks.size() > context.table_ranks_max;
  std::vector<const RankLag*> rows;
  for (const RankLag& lag : result.ranks) rows.push_back(&lag);
  std::size_t stragglers = 0;
  if (large) {
    for (const RankLag& lag : result.ranks) stragglers += lag.straggler ? 1 : 0;
    const std::size_t top = std::min(rows.size(), context.table_top_ranks);
    std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(top), rows.end(),
                      [](const RankLag* a, const RankLag* b) {
                        if (a->straggler != b->straggler) return a->straggler;
                        return a->excess != b->excess ? a->excess > b->excess : a->rank < b->rank;
                      });
    rows.resize(top);
  }
  for (const RankLag* row : rows) {
    const RankLag& lag = *row;
    out << (lag.straggler ? "<tr class=\"straggler\">" : "<tr>");
    cell(out, std::to_string(lag.rank), true);
    cell(out, std::to_string(lag.steps), true);
    cell(out, fixed(lag.step_median_ms), true);
    cell(out, fixed(lag.step_p90_ms), true);
    cell(out, (lag.excess >= 0 ? "+" : "") + fixed(lag.excess * 100.0) + "%", true);
    for (const double ms : lag.phase_median_ms) cell(out, fixed(ms), true);
    cell(out, lag.straggler ? "yes" : "no");
    cell(out, lag.lag_phase ? std::string(phase_name(*lag.lag_phase)) : "");
    out << "</tr>\n";
  }
  if (large) {
    std::vector<std::vector<double>> columns(4 + kPhaseCount);
    for (const RankLag& lag : result.ranks) {
      columns[0].push_back(static_cast<double>(lag.steps));
      columns[1].push_back(lag.step_median_ms);
      columns[2].push_back(lag.step_p90_ms);
      columns[3].push_back(lag.excess * 100.0);
      for (std::size_t p = 0; p < kPhaseCount; ++p) {
        columns[4 + p].push_back(lag.phase_median_ms[p]);
      }
    }
    out << "<tr class=\"distribution\"><th colspan=\"" << 7 + kPhaseCount << "\">all "
        << result.ranks.size() << " ranks (vs across ranks in %)</th></tr>\n";
    write_distribution_rows(columns, 0, 2, out);
  }
  out << "<tr><th>across</th><td></td>";
  cell(out, fixed(result.step_median_ms), true);
  out << "<td></td><td></td>";
  for (const double ms : result.phase_median_ms) cell(out, fixed(ms), true);
  out << "<td></td><td></td></tr>\n</table>\n";
  if (large) {
    out << "<p class=\"note\">" << result.ranks.size() << " ranks (more than "
        << context.table_ranks_max << "): the table shows " << rows.size()
        << " ranks, the stragglers first, then those with the largest excess over the median "
           "across ranks, then the distribution of each column over all ranks; stragglers by the "
           "threshold: "
        << stragglers << " of " << result.ranks.size() << " ranks.</p>\n";
  }
}

void write_stalls(const RunAnalysis& analysis, std::ostream& out) {
  const StallResult& result = analysis.stalls;
  out << "<h2>Stall attribution</h2>\n";
  if (!result.enough_ranks) {
    out << "<p class=\"note\">Not enough ranks to compare: attribution needs steps of the same "
           "iteration on at least two ranks.</p>\n";
    return;
  }
  out << "<p class=\"note\">" << result.iterations.size() << " iterations on " << result.ranks
      << " ranks; run time " << fixed(result.run_ms)
      << " ms (wall time: per iteration, the median across ranks of the time since the rank's "
         "previous step ended), of which "
      << fixed(result.exposed_ms)
      << " ms is the last rank's lead at the synchronization (the time the others wait). Each "
         "increment of that lead is credited to the rank and phase where it appears.</p>\n";
  if (!result.stages.empty()) {
    out << "<p class=\"note\">Per pipeline stage, the median over its ranks of each rank's "
           "median per step: compute (every phase but communication and pipeline) and bubble "
           "(pipeline sends and receives).</p>\n<table><tr><th>stage</th><th>ranks</th>"
           "<th>step ms</th><th>compute ms</th><th>bubble ms</th></tr>\n";
    for (const StageTime& stage : result.stages) {
      out << "<tr>";
      cell(out, std::to_string(stage.stage) + " of " + std::to_string(stage.stages));
      cell(out, rank_ranges(stage.ranks));
      cell(out, fixed(stage.step_ms), true);
      cell(out, fixed(stage.compute_ms), true);
      cell(out, fixed(stage.bubble_ms), true);
      out << "</tr>\n";
    }
    out << "</table>\n";
  }
  if (result.suspects.empty()) {
    out << "<p class=\"note\">No rank stands out.</p>\n";
    return;
  }
  out << "<p class=\"note\">A suspect lags the other ranks by at least "
      << fixed(result.min_excess_ms)
      << " ms per step (--min-excess) over a window, beyond what the run's own noise explains "
         "at a false-alarm rate of "
      << fixed(result.false_alarm_rate * 100.0) << "% per run (--false-alarm-rate; " << result.tests
      << " windows tested, threshold " << fixed(result.z_critical, 2)
      << " standard errors). A node, pipeline stage or parallel group that lags together is "
         "named once.</p>\n";
  out << "<table><tr><th>rank or group</th><th>phase</th><th>excess ms per step</th>"
         "<th>iterations</th><th>exposed ms</th><th>share of the run</th><th>others wait</th>"
         "<th>95% CI ms</th></tr>\n";
  for (const StallSuspect& suspect : result.suspects) {
    out << "<tr class=\"straggler\">";
    if (suspect.kind == SuspectKind::rank) {
      cell(out, std::to_string(suspect.rank), true);
    } else {
      cell(out, suspect.group + ": ranks " + rank_ranges(suspect.ranks));
    }
    cell(out, std::string(phase_name(suspect.phase)));
    cell(out, "+" + fixed(suspect.excess_ms_per_step), true);
    cell(out,
         std::to_string(suspect.first_iteration) + "-" + std::to_string(suspect.last_iteration),
         true);
    cell(out, fixed(suspect.exposed_ms), true);
    cell(out, fixed(suspect.share * 100.0) + "%", true);
    cell(out, suspect.others_wait ? "yes" : "no");
    char ci[64];
    std::snprintf(ci, sizeof(ci), "%+.1f to %+.1f", suspect.ci_low_ms, suspect.ci_high_ms);
    cell(out, ci, true);
    out << "</tr>\n";
  }
  out << "</table>\n";
}

std::string header_value(const std::string& value) { return value.empty() ? "-" : value; }

void write_phase_legend(std::ostream& out) {
  out << "<p class=\"note\">Phases:";
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    out << " " << html_escape(phase_name(static_cast<Phase>(p)));
  }
  out << " (colors as in the breakdown below).</p>\n";
}

void write_timeline_section(bool truncated, std::ostream& out) {
  out << "<h2>Timeline</h2>\n<div class=\"controls\"><button id=\"zoom-in\" type=\"button\">"
         "zoom in</button><button id=\"zoom-out\" type=\"button\">zoom out</button>"
         "<button id=\"zoom-reset\" type=\"button\">reset</button><span class=\"note\">"
         "wheel to zoom, drag to pan; rows per rank: job spans, steps (and checkpoints or "
         "evaluations outside steps), phases inside steps</span></div>\n"
         "<div class=\"chart\"><svg id=\"timeline\"></svg></div>\n";
  if (truncated) {
    out << "<p class=\"note\">The timeline shows the first " << kMaxTimelineSteps << " steps and "
        << kMaxTimelinePhases << " phase spans; open the Perfetto trace for all of them.</p>\n";
  }
  write_phase_legend(out);
}

void write_heatmap_section(const RunAnalysis& analysis, const HtmlContext& context,
                           std::ostream& out) {
  out << "<h2>Timeline: ranks x iterations</h2>\n<p class=\"note\">" << analysis.data.ranks.size()
      << " ranks (more than " << context.timeline_lanes_max
      << "): one row per rank and one column per iteration; large runs group them (a column is "
         "the mean of its iterations; a row shows, per column, the rank of its group furthest "
         "from the column's median, so one slow rank is not averaged away). Colors run from the "
         "1st to the 99th percentile; hover for the values. In a synchronous run the step time is "
         "the same down a column; the rank the others wait for is the row that waits least in "
         "communication.";
  if (!analysis.stalls.suspects.empty()) {
    out << " Outlined bands mark the stall suspects, each over its ranks' rows (a node, pipeline "
           "stage or parallel group as one band, the first "
        << kMaxHeatmapBands << " suspects); the legend under each map names them.";
  }
  out << "</p>\n<div id=\"heatmaps\"></div>\n";
}

// Under each per-rank chart of a large run: which ranks it shows.
void write_detail_note(const HtmlContext& context, std::ostream& out) {
  if (context.detail_ranks.all) return;
  out << "<p class=\"note\">Showing " << html_escape(context.detail_ranks.describe())
      << "; the heatmaps above show every rank.</p>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string script_safe_json(const std::string& json_text) {
  std::string out;
  out.reserve(json_text.size());
  for (std::size_t i = 0; i < json_text.size(); ++i) {
    const char c = json_text[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xe2' && i + 2 < json_text.size() && json_text[i + 1] == '\x80' &&
               (json_text[i + 2] == '\xa8' || json_text[i + 2] == '\xa9')) {
      out += json_text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

void write_html(const RunAnalysis& analysis, const HtmlContext& context, std::ostream& out) {
  bool truncated = false;
  const ChartRange range = context.chart_range ? *context.chart_range : chart_range(analysis);
  const json data = page_data(analysis, context, range, truncated);
  const RunInfo& info = analysis.info;
  std::string iterations = "none";
  if (!analysis.iterations.empty()) {
    iterations = std::to_string(analysis.iterations.size()) + " (" +
                 std::to_string(*analysis.iterations.begin()) + "-" +
                 std::to_string(*analysis.iterations.rbegin()) + ")";
  }
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<title>lens report: "
      << html_escape(header_value(info.run_id)) << "</title>\n<style>" << report_css()
      << "</style>\n</head>\n<body>\n<h1>lens report</h1>\n<div class=\"meta\">"
      << "<span>run id: <b>" << html_escape(header_value(info.run_id)) << "</b></span>"
      << "<span>service: <b>" << html_escape(header_value(info.service_name)) << "</b></span>"
      << "<span>world size: <b>"
      << (info.world_size ? std::to_string(*info.world_size) : std::string("-")) << "</b></span>"
      << "<span>ranks reporting: <b>" << analysis.data.ranks.size() << "</b></span>"
      << "<span>iterations: <b>" << html_escape(iterations) << "</b></span>"
      << "<span>spans: <b>" << analysis.span_count << "</b></span>"
      << "<span>metric points: <b>" << analysis.metric_points << "</b></span>"
      << "<span>log records: <b>" << analysis.log_records << "</b></span></div>\n"
      << "<p class=\"meta\">from " << html_escape(context.source_dir) << "</p>\n";

  out << "<div class=\"summary\">";
  std::set<std::string> suspect_lines;  // a group's sentence starts with its name
  for (const StallSuspect& suspect : analysis.stalls.suspects) {
    suspect_lines.insert(suspect_sentence(suspect, analysis.stalls));
  }
  for (const std::string& line : context.summary_lines) {
    // A stall suspect's sentence, or telemetry that was lost.
    const bool flag = line.rfind("rank ", 0) == 0 || line.rfind("telemetry ", 0) == 0 ||
                      suspect_lines.count(line) != 0;
    out << (flag ? "<span class=\"flag\">" : "<span>") << html_escape(line) << "</span>\n";
  }
  out << "</div>\n" << context.hangs_html;
  out << context.job_ledger_html;

  write_stalls(analysis, out);

  if (uses_heatmap(analysis, context)) {
    write_heatmap_section(analysis, context, out);
  } else {
    write_timeline_section(truncated, out);
  }
  out << "<h2>Step time per rank</h2>\n";
  write_detail_note(context, out);
  out << "<div class=\"chart\"><svg id=\"step-chart\"></svg></div>\n"
         "<h2>Phase breakdown (mean ms per step)</h2>\n";
  write_detail_note(context, out);
  out << "<div class=\"chart\"><svg id=\"breakdown-chart\"></svg></div>\n"
         "<p class=\"note\">Each instant of a step counts once, for the innermost phase span "
         "running then; other = step time outside every phase span. Checkpoints and "
         "evaluations outside steps are spread over the steps.</p>\n";
  write_stragglers(analysis, context, out);
  out << "<h2>Training curves per iteration</h2>\n";
  write_detail_note(context, out);
  out << "<p class=\"note\">One point per recorded step, from the megatron.train_step spans: "
         "their numeric attributes (loss, grad norm, ...), tokens/s from the step time and the "
         "resource's dl.batch_size x dl.sequence_length, and the step time across ranks "
         "(median, p90 and max of the step spans, exact).</p>\n"
         "<h3>step time across ranks (ms)</h3>\n"
         "<div class=\"chart\"><svg id=\"step-quantile-chart\"></svg></div>\n"
         "<div id=\"iteration-charts\"></div>\n"
         "<h2>Training metrics</h2>\n<h3>step duration percentiles "
         "(megatron.training.step_duration_ms, all ranks, interpolated in histogram "
         "buckets)</h3>\n"
         "<div class=\"chart\"><svg id=\"percentile-chart\"></svg></div>\n"
         "<div id=\"metric-charts\"></div>\n"
         "<h2>lens self-metrics</h2>\n<div id=\"self-metric-charts\"></div>\n";
  write_completeness(analysis.completeness, context, out);
  write_resources(analysis, context, out);
  std::vector<std::string> warnings = context.warnings;
  for (std::string& warning : chart_range_warnings(range)) warnings.push_back(std::move(warning));
  if (!warnings.empty()) {
    out << "<h2>Warnings</h2>\n<ul class=\"warnings\">\n";
    for (const std::string& warning : warnings) {
      out << "<li>" << html_escape(warning) << "</li>\n";
    }
    out << "</ul>\n";
  }
  if (!context.perfetto_path.empty() && context.perfetto_ranks.empty()) {
    out << "<p class=\"note\">Every span is in the Perfetto trace "
        << html_escape(context.perfetto_path)
        << ": open it in ui.perfetto.dev (Open trace file) or chrome://tracing.</p>\n";
  } else if (!context.perfetto_path.empty()) {
    out << "<p class=\"note\">The Perfetto trace " << html_escape(context.perfetto_path)
        << " has every span of " << html_escape(context.perfetto_ranks)
        << " (lens report --perfetto-all-ranks writes every rank): open it in ui.perfetto.dev "
           "(Open trace file) or chrome://tracing.</p>\n";
  }
  out << "<script type=\"application/json\" id=\"lens-data\">"
      << script_safe_json(data.dump(-1, ' ', false, json::error_handler_t::replace))
      << "</script>\n<script>" << report_script() << "</script>\n</body>\n</html>\n";
}

}  // namespace lens::report
