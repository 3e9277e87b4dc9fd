// The command line of `lens report`: DIR [-o FILE] [--perfetto FILE] [--perfetto-all-ranks]
// [--threshold X]
// [--window N] [--run-id ID] [--min-excess X] [--false-alarm-rate P] [--help], or a comparison of
// runs: DIR_A DIR_B ... [--run-id ID] or DIR --run-id A --run-id B ... [-o FILE], or the job
// ledger of the runs of one job: --job DIR... [-o FILE]. Errors are one
// line naming the flag or path, the bad value and what is accepted. Pure functions; thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "lens/result.hpp"

namespace lens::report {

inline constexpr const char* kReportUsage =
    "usage: lens report DIR [-o report.html] [--perfetto trace.json] [--perfetto-all-ranks]\n"
    "                   [--threshold 0.10] [--window N] [--run-id ID]\n"
    "                   [--min-excess 0.02] [--false-alarm-rate 0.01]\n"
    "       lens report DIR_A DIR_B [...] [-o compare.html] [--run-id ID]\n"
    "       lens report DIR --run-id A --run-id B [...] [-o compare.html]\n"
    "       lens report --job DIR [DIR...] [-o job.html]\n"
    "\n"
    "Reads the OTLP JSON line files in DIR (lens collect's traces.jsonl, metrics.jsonl,\n"
    "logs.jsonl, or the OpenTelemetry Collector file exporter's) and writes a self-contained\n"
    "HTML report and a Perfetto/Chrome trace; prints a short summary with the stragglers.\n"
    "\n"
    "options:\n"
    "  -o FILE            the HTML report (default DIR/report.html)\n"
    "  --perfetto FILE    the trace-event JSON for ui.perfetto.dev (default DIR/trace.json)\n"
    "  --perfetto-all-ranks  every rank in the trace (default: past 32 ranks or 400,000\n"
    "                     spans, the stall suspects and 3 typical ranks)\n"
    "  --threshold X      flag a rank whose median step (or phase) time exceeds the median\n"
    "                     across ranks by more than this fraction (default 0.10 = 10%)\n"
    "  --window N         compare the N most recent iterations (default: all)\n"
    "  --min-excess X     a stall suspect lags by at least this fraction of the median step\n"
    "                     (default 0.02 = 2%)\n"
    "  --false-alarm-rate P  the chance that a balanced run shows any stall suspect\n"
    "                     (default 0.01 = 1%)\n"
    "  --run-id ID        only the telemetry of run ID (resource attribute nemo.run.id;\n"
    "                     default: all, with a warning when DIR holds several runs)\n"
    "  --help             show this help\n"
    "\n"
    "With several DIRs (each one run, or the run --run-id picks in each), or one DIR and several\n"
    "--run-id, writes one comparison page instead (default DIR_A/compare.html): step time and\n"
    "loss per iteration overlaid, one colour per run.\n"
    "\n"
    "With --job, the DIRs hold the runs of one job (one run per DIR, or several runs in one\n"
    "DIR told apart by nemo.lens.run_uuid): writes the job ledger instead (default\n"
    "FIRST_DIR/job.html, and its \"ledger\" into summary.json next to it): the runs in order\n"
    "and the job's wall time per rank by cause (start-up, productive, checkpoint load and\n"
    "save, evaluation, straggler wait, work lost to redone iterations, hang, failure,\n"
    "restart gap, shutdown).\n";

// One run of a comparison.
struct ComparedSource {
  std::filesystem::path dir;
  std::optional<std::string> run_id;
};

struct ReportOptions {
  std::filesystem::path dir;
  std::filesystem::path html;
  std::filesystem::path perfetto;
  double threshold = 0.10;
  std::optional<int> window;
  double min_excess = 0.02;        // stall suspects: of the median step
  double false_alarm_rate = 0.01;  // stall suspects: per run
  std::optional<std::string> run_id;
  bool perfetto_all_ranks = false;  // else large runs' traces keep a few ranks (rank_selection)
  bool help = false;
  // Two or more runs to compare (then only `html` applies); empty for the single-run report.
  std::vector<ComparedSource> compare;
  // --job: the DIRs of one job's runs, for the job ledger (then only `html` applies).
  std::vector<std::filesystem::path> job;
};

// Messages do not carry the "lens report: " prefix.
Result<ReportOptions> parse_report_options(const std::vector<std::string>& args);

}  // namespace lens::report
