// `lens report` end to end (see report.hpp).
#include "report/report.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "report/analysis.hpp"
#include "report/chart_range.hpp"
#include "report/compare_html_writer.hpp"
#include "report/hangs.hpp"
#include "report/html_writer.hpp"
#include "report/job_report.hpp"
#include "report/otlp_reader.hpp"
#include "report/perfetto_writer.hpp"
#include "report/rank_selection.hpp"
#include "report/report_file.hpp"
#include "report/run_builder.hpp"
#include "report/run_comparison.hpp"
#include "report/summary.hpp"
#include "report/summary_json.hpp"

namespace lens::report {
namespace {

constexpr const char* kPrefix = "lens report: ";
// More warnings than this are counted, not printed (a corrupt file could have millions).
constexpr std::size_t kPrintedWarnings = 20;

int invalid(std::ostream& err, const std::string& message) {
  err << kPrefix << message << "\n";
  return 2;
}

// Reads one run: DIR's telemetry, of `run_id` only when given. Prints the reader's warnings and
// returns those for the page in `warnings`; returns 0, or 2 after printing why DIR is unusable.
int load_run(const std::filesystem::path& path, const std::optional<std::string>& run_id,
             std::ostream& err, RunData& data, std::vector<std::string>& warnings,
             bool* several_runs = nullptr) {
  const std::string dir = path.string();
  RunBuilder builder = run_id ? RunBuilder(*run_id) : RunBuilder();
  Result<ReadStats> read = read_telemetry_dir(path, builder);
  if (!read.ok()) {
    return invalid(err, "cannot read DIR '" + dir + "': " + read.message() +
                            "; accepted: a directory of OTLP JSON line files");
  }
  const ReadStats& stats = *read;
  for (std::size_t i = 0; i < stats.warnings.size() && i < kPrintedWarnings; ++i) {
    err << kPrefix << "warning: " << stats.warnings[i] << "\n";
  }
  if (stats.warnings.size() > kPrintedWarnings) {
    err << kPrefix << "warning: " << stats.warnings.size() - kPrintedWarnings
        << " more lines skipped\n";
  }
  if (stats.telemetry_files.empty()) {
    return invalid(err, "no telemetry files in DIR '" + dir + "' (" +
                            std::to_string(stats.files_seen) +
                            " files, none of OTLP JSON lines); accepted: traces.jsonl, "
                            "metrics.jsonl, logs.jsonl or OpenTelemetry Collector file exporter "
                            "output");
  }
  std::string run_ids;  // the non-empty ones, listed
  std::size_t named_runs = 0;
  for (const auto& [id, resources] : builder.run_ids()) {
    if (id.empty()) continue;
    run_ids += (run_ids.empty() ? "" : ", ") + id;
    ++named_runs;
  }
  if (run_id && builder.run_ids().count(*run_id) == 0) {
    return invalid(
        err,
        "no telemetry of --run-id '" + *run_id + "' in DIR '" + dir + "'; accepted: " +
            (run_ids.empty() ? std::string("none (no nemo.run.id there)") : "one of " + run_ids));
  }
  warnings = stats.warnings;
  if (warnings.size() > kPrintedWarnings) warnings.resize(kPrintedWarnings);
  if (!run_id && named_runs > 1) {
    warnings.push_back("DIR '" + dir + "' holds " + std::to_string(named_runs) +
                       " runs (nemo.run.id: " + run_ids +
                       "); their telemetry is merged: pick one with --run-id ID");
    err << kPrefix << "warning: " << warnings.back() << "\n";
  }
  if (several_runs != nullptr) *several_runs = named_runs > 1 || builder.run_uuids() > 1;
  data = builder.take();
  const std::uint64_t unranked =
      data.spans_without_rank + data.points_without_rank + data.logs_without_rank;
  if (data.ranks.empty()) {
    return invalid(err, "no rank in DIR '" + dir + "': " + std::to_string(unranked) +
                            " spans, points and log records without a dl.rank or rank resource "
                            "attribute; accepted: telemetry whose resource has dl.rank");
  }
  if (unranked != 0) {
    err << kPrefix << "warning: " << unranked
        << " spans, points and log records without a dl.rank or rank resource attribute "
           "ignored\n";
  }
  return 0;
}

// `lens report A B ...`: reads each run and writes the comparison page only.
int run_comparison(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<ComparedRun> runs;
  std::vector<std::string> warnings;
  for (const ComparedSource& source : options.compare) {
    RunData data;
    std::vector<std::string> run_warnings;
    if (const int status = load_run(source.dir, source.run_id, err, data, run_warnings);
        status != 0) {
      return status;
    }
    warnings.insert(warnings.end(), run_warnings.begin(), run_warnings.end());
    runs.push_back(compare_run(data, source.dir.string()));
  }
  if (!write_report_file(options.html, "-o", err, [&](std::ostream& file) {
        write_comparison_html(runs, warnings, file);
      })) {
    return 1;
  }
  for (const ComparedRun& run : runs) out << run_summary_line(run) << "\n";
  out << "comparison: " << options.html.string() << "\n";
  return 0;
}

}  // namespace

int run_report(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  if (!options.job.empty()) return run_job_report(options, out, err);
  if (!options.compare.empty()) return run_comparison(options, out, err);
  const std::string dir = options.dir.string();
  RunData data;
  std::vector<std::string> warnings;
  bool several_runs = false;
  if (const int status = load_run(options.dir, options.run_id, err, data, warnings, &several_runs);
      status != 0) {
    return status;
  }
  // Several runs of one job in DIR: its ledger too (docs/report.md, "Job ledger").
  const std::optional<JobLedger> ledger =
      several_runs && !options.run_id ? job_ledger_in_dir(options.dir) : std::nullopt;
  const RunAnalysis analysis = analyze(std::move(data), {options.threshold, options.window},
                                       {options.min_excess, options.false_alarm_rate});
  std::vector<std::string> summary = summary_lines(analysis);
  // Outlying iterations and times are left out of the page's charts, with a warning.
  const ChartRange range = chart_range(analysis);
  const std::vector<std::string> chart_warnings = chart_range_warnings(range);
  for (const std::string& warning : chart_warnings) {
    err << kPrefix << "warning: " << warning << "\n";
  }
  HangLog hangs(options.run_id);  // the ranks' hang reports, from DIR/logs.jsonl
  hangs.consume_file(options.dir / "logs.jsonl");
  if (const std::string line = no_progress_line(hangs.ranks()); !line.empty()) {
    summary.insert(summary.begin(), "hang: " + line);
  }
  const std::vector<std::string> verdicts = hang_verdicts(hangs.ranks());  // joined by collective
  summary.insert(summary.begin(), verdicts.begin(), verdicts.end());

  const RankSelection perfetto_ranks =
      select_ranks(analysis, RankSelectionLimits{}, options.perfetto_all_ranks);
  std::uint64_t spans_left_out = 0;  // past the trace's span cap (not with --perfetto-all-ranks)
  if (!write_report_file(options.perfetto, "--perfetto", err, [&](std::ostream& file) {
        spans_left_out = write_perfetto(analysis, file, perfetto_ranks,
                                        options.perfetto_all_ranks ? UINT64_MAX : kMaxTraceSpans);
      })) {
    return 1;
  }
  HtmlContext context;
  context.source_dir = dir;
  context.perfetto_path = options.perfetto.string();
  context.perfetto_ranks = perfetto_ranks.describe();
  context.detail_ranks = select_ranks(analysis, RankSelectionLimits{});
  context.summary_lines = summary;
  context.warnings = std::move(warnings);
  context.hangs_html = hangs_html(hangs.ranks());
  context.chart_range = range;
  if (ledger) {
    context.job_ledger_html = ledger_html(*ledger);
    for (const std::string& line : ledger_summary_lines(*ledger)) summary.push_back(line);
  }
  if (!write_report_file(options.html, "-o", err,
                         [&](std::ostream& file) { write_html(analysis, context, file); })) {
    return 1;
  }
  const std::filesystem::path summary_path = options.html.parent_path() / "summary.json";
  if (!write_report_file(summary_path, "summary.json (next to -o)", err, [&](std::ostream& file) {
        nlohmann::json summary_object = summary_json(analysis);
        summary_object["hangs"] = hangs_json(hangs.ranks());
        summary_object["hang_verdicts"] = verdicts;
        summary_object["chart_warnings"] = chart_warnings;
        if (ledger) summary_object["ledger"] = ledger_json(*ledger);
        file << summary_object.dump(2) << "\n";
      })) {
    return 1;
  }
  for (const std::string& line : summary) out << line << "\n";
  out << "report: " << options.html.string() << "\n";
  out << "summary: " << summary_path.string() << "\n";
  out << "perfetto trace: " << options.perfetto.string() << " (open in ui.perfetto.dev)\n";
  if (!perfetto_ranks.all) {
    out << "perfetto trace keeps " << perfetto_ranks.describe()
        << "; --perfetto-all-ranks for every rank\n";
  }
  if (spans_left_out != 0) {
    out << "perfetto trace leaves out " << spans_left_out << " spans past its cap of "
        << kMaxTraceSpans
        << " (each rank keeps its earliest); --perfetto-all-ranks for every span\n";
  }
  return 0;
}

}  // namespace lens::report
